package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestMapEveryField(t *testing.T) {
	g := NewWithT(t)
	a := analyze(t, "webapp", releaseValues(t))
	m := a.Map()

	fields := 0
	for _, o := range a.base.Objects {
		walkLeaves(o.Object.Object, "", func(string, any) { fields++ })
	}
	g.Expect(m.Len()).To(Equal(fields), "every leaf of every object")
	g.Expect(m.Results()).To(HaveLen(fields))

	for _, tt := range findCases {
		res, ok := m.Lookup(tt.obj, tt.ptr)
		g.Expect(ok).To(BeTrue(), tt.name)
		expectResult(g, res, tt)
	}
	_, ok := m.Lookup(deployment, "/spec/paused")
	g.Expect(ok).To(BeFalse())

	// One probe per key the chart reads, at most: every webapp key is
	// read, and the group probes that find the bools and b64enc's key add
	// a few more.
	g.Expect(m.Renders()).To(BeNumerically("<=", 2*len(a.leaves)))
	g.Expect(m.Renders()).To(Equal(a.Renders()))
}

func TestMapAgreesWithFind(t *testing.T) {
	g := NewWithT(t)
	m := analyze(t, "webapp", releaseValues(t)).Map()
	for _, want := range m.Results() {
		if want.Object != deployment {
			continue
		}
		// A fresh analysis per field: no probe of the map's is reused.
		got, err := analyze(t, "webapp", releaseValues(t)).Find(want.Object, want.Pointer)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want), want.Pointer)
	}
}

func TestFindAfterMapRendersNothing(t *testing.T) {
	g := NewWithT(t)
	a := analyze(t, "webapp", releaseValues(t))
	m := a.Map()
	n := a.Renders()
	res, err := a.Find(deployment, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	want, _ := m.Lookup(deployment, "/spec/replicas")
	g.Expect(res).To(Equal(want))
	g.Expect(a.Map()).To(BeIdenticalTo(m))
	g.Expect(a.Renders()).To(Equal(n))
}

func TestMapResultsOrder(t *testing.T) {
	g := NewWithT(t)
	rs := analyze(t, "strict", nil).Map().Results()
	var ptrs []string
	for _, r := range rs {
		ptrs = append(ptrs, r.Pointer)
	}
	g.Expect(ptrs).To(Equal([]string{"/apiVersion", "/data/size", "/data/speed", "/kind", "/metadata/name"}))
}
