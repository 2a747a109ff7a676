package chart

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// CacheKey names one release's Map: the chart artifact's digest (as
// source-controller reports it) and ValuesHash of its values.
type CacheKey struct {
	ChartDigest string
	ValuesHash  string
}

// Cache keeps the latest Maps, at most a fixed number, dropping the least
// recently used first. It is safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cacheEntry, most recently used first
	byKey map[CacheKey]*list.Element
}

type cacheEntry struct {
	key CacheKey
	m   *Map
}

// NewCache returns a cache that holds at most max Maps.
func NewCache(max int) (*Cache, error) {
	if max < 1 {
		return nil, fmt.Errorf("chart cache size %d: must be at least 1", max)
	}
	return &Cache{max: max, order: list.New(), byKey: map[CacheKey]*list.Element{}}, nil
}

// Get returns the Map held under k.
func (c *Cache) Get(k CacheKey) (*Map, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).m, true
}

// Add holds m under k, replacing what was there, and drops the least
// recently used Map when the cache is full.
func (c *Cache) Add(k CacheKey, m *Map) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		e.Value.(*cacheEntry).m = m
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&cacheEntry{key: k, m: m})
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
}

// Len is the number of Maps held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// ValuesHash hashes what a Map depends on besides the chart: the
// release's values and the release's name, namespace, revision and
// install or upgrade, which templates read too. Map order does not
// matter: encoding/json writes keys sorted.
func ValuesHash(values map[string]any, rel Release) (string, error) {
	vals, err := normalize(values)
	if err != nil {
		return "", err
	}
	rev := rel.Revision
	if rev == 0 {
		rev = 1 // renders as revision 1, see Release
	}
	raw, err := json.Marshal(struct {
		Values    map[string]any `json:"values"`
		Name      string         `json:"name"`
		Namespace string         `json:"namespace"`
		Revision  int            `json:"revision"`
		IsUpgrade bool           `json:"isUpgrade"`
	}{vals, rel.Name, rel.Namespace, rev, rel.IsUpgrade})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrValues, err)
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
