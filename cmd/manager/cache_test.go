package manager

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCacheOptionsFor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CacheOptionsFor(nil, nil).DefaultNamespaces).To(BeNil(), "the whole cluster")
	g.Expect(CacheOptionsFor([]string{""}, nil).DefaultNamespaces).To(BeNil(), "the whole cluster")
	got := CacheOptionsFor([]string{"", "tenant-a", "tenant-b"}, nil).DefaultNamespaces
	g.Expect(got).To(HaveLen(2))
	g.Expect(got).To(HaveKey("tenant-a"))
	g.Expect(got).To(HaveKey("tenant-b"))
}
