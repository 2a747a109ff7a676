package chart

import (
	"container/list"
	"fmt"
	"sync"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// Cache keeps the Analyses of the charts and values analysed last, at
// most a fixed number, dropping the least recently used first, so that a
// release that renders what an earlier one did (an upgrade that changed
// neither the chart nor the values, a rollback, a HelmRelease recreated
// under another name) finds the keys found for it rather than render the
// chart again (issue 19 §8). It is safe for concurrent use.
//
// One Cache serves one Release.ClusterScoped: it keys objects, and is not
// part of the CacheKey.
type Cache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cacheEntry, most recently used first
	byKey map[CacheKey]*list.Element
	// analyze is Analyze; tests count its calls.
	analyze func(*chartv2.Chart, map[string]any, Release) (*Analysis, error)
}

// cacheEntry is one key's Analysis, made once: callers that ask for the
// key while it is being made wait for it rather than render too.
type cacheEntry struct {
	key  CacheKey
	once sync.Once
	a    *Analysis
	err  error
}

// NewCache returns a cache that holds at most max Analyses.
func NewCache(max int) (*Cache, error) {
	if max < 1 {
		return nil, fmt.Errorf("chart cache size %d: must be at least 1", max)
	}
	return &Cache{max: max, order: list.New(), byKey: map[CacheKey]*list.Element{}, analyze: Analyze}, nil
}

// Analyze returns the Analysis of ch with values for rel, made by
// Analyze once per CacheKey while the cache holds it. Its error is kept
// too: the same chart and values fail the same way, so a release that
// does not render is not rendered again for every release version.
func (c *Cache) Analyze(ch *chartv2.Chart, values map[string]any, rel Release) (*Analysis, error) {
	k, err := KeyOf(ch, values, rel)
	if err != nil {
		return nil, err
	}
	e := c.entry(k)
	// Outside the lock: a render takes long, and other keys need not wait.
	e.once.Do(func() { e.a, e.err = c.analyze(ch, values, rel) })
	return e.a, e.err
}

// entry returns the entry of k, added when missing, as the most recently
// used, and drops the least recently used when the cache is full. An
// entry dropped while being made is still made for those who asked.
func (c *Cache) entry(k CacheKey) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*cacheEntry)
	}
	e := &cacheEntry{key: k}
	c.byKey[k] = c.order.PushFront(e)
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
	return e
}

// Len is the number of Analyses held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
