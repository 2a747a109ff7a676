package chart

import (
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	g := NewWithT(t)
	c, err := NewCache(2)
	g.Expect(err).NotTo(HaveOccurred())
	a, b, d := &Map{renders: 1}, &Map{renders: 2}, &Map{renders: 3}
	ka, kb, kd := CacheKey{"sha256:1", "v"}, CacheKey{"sha256:2", "v"}, CacheKey{"sha256:1", "w"}

	c.Add(ka, a)
	c.Add(kb, b)
	got, ok := c.Get(ka) // a is now the most recently used
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(BeIdenticalTo(a))
	c.Add(kd, d)

	g.Expect(c.Len()).To(Equal(2))
	_, ok = c.Get(kb)
	g.Expect(ok).To(BeFalse(), "b was used least recently")
	got, _ = c.Get(kd)
	g.Expect(got).To(BeIdenticalTo(d))

	c.Add(ka, b)
	got, _ = c.Get(ka)
	g.Expect(got).To(BeIdenticalTo(b), "Add replaces")
	g.Expect(c.Len()).To(Equal(2))
}

func TestNewCacheRefusesNoRoom(t *testing.T) {
	_, err := NewCache(0)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("at least 1")))
}

func TestCacheConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	c, err := NewCache(8)
	g.Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				k := CacheKey{ChartDigest: fmt.Sprint(i % 12), ValuesHash: fmt.Sprint(w)}
				c.Add(k, &Map{renders: i})
				if m, ok := c.Get(k); ok && m == nil {
					t.Error("a held map is never nil")
				}
			}
		}()
	}
	wg.Wait()
	g.Expect(c.Len()).To(Equal(8), "bounded however many were added")
}

func TestValuesHash(t *testing.T) {
	g := NewWithT(t)
	hash := func(v map[string]any, rel Release) string {
		h, err := ValuesHash(v, rel)
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
	base := hash(map[string]any{"a": 1, "b": map[string]any{"c": "x"}}, testRelease)
	g.Expect(base).To(HavePrefix("sha256:"))
	g.Expect(hash(map[string]any{"b": map[string]any{"c": "x"}, "a": float64(1)}, testRelease)).To(Equal(base),
		"key order and number type do not matter")
	rev1 := testRelease
	rev1.Revision = 1
	g.Expect(hash(map[string]any{"a": 1, "b": map[string]any{"c": "x"}}, rev1)).To(Equal(base), "revision 0 renders as 1")
	g.Expect(hash(map[string]any{"a": 2, "b": map[string]any{"c": "x"}}, testRelease)).NotTo(Equal(base))
	other := testRelease
	other.Namespace = "dev"
	g.Expect(hash(map[string]any{"a": 1, "b": map[string]any{"c": "x"}}, other)).NotTo(Equal(base), "the namespace keys objects")

	_, err := ValuesHash(map[string]any{"bad": make(chan int)}, testRelease)
	g.Expect(err).To(MatchError(ErrValues))
}
