package chart

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

func TestMapEveryField(t *testing.T) {
	g := NewWithT(t)
	a := analyze(t, "webapp", releaseValues(t))
	m := a.Map()

	fields := 0
	for _, o := range a.base.Objects {
		jsonptr.WalkLeaves(o.Object.Object, "", func(string, any) { fields++ })
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

// soloOracle classifies every field of a from solo probes of every key,
// one render per key, without the marked render or groups: what Map must
// agree with, however few renders it takes.
func soloOracle(a *Analysis) map[fieldRef]Result {
	for i := range a.leaves {
		a.probe([]int{i})
	}
	a.batched = true // no marked render: every key answers alone
	out := map[fieldRef]Result{}
	for _, f := range a.allFields() {
		a.explored[f] = true
		out[f] = a.result(f)
	}
	return out
}

func TestMapAgreesWithSoloProbes(t *testing.T) {
	tests := []struct {
		chart  string
		values map[string]any
		// fewer: the chart has keys enough for Map to render fewer times
		// than once per key; strict has two, one of them unprobeable.
		fewer bool
	}{
		{"webapp", nil, true},
		{"strict", nil, false},
		{"umbrella", map[string]any{"global": map[string]any{"region": "us-east-1"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.chart, func(t *testing.T) {
			g := NewWithT(t)
			values := tt.values
			if tt.chart == "webapp" {
				values = releaseValues(t)
			}
			oracle := analyze(t, tt.chart, values)
			want := soloOracle(oracle)
			a := analyze(t, tt.chart, values)
			m := a.Map()
			g.Expect(m.Len()).To(Equal(len(want)))
			for f, w := range want {
				got, ok := m.Lookup(w.Object, w.Pointer)
				g.Expect(ok).To(BeTrue())
				g.Expect(got).To(Equal(w), "%s %s", w.Object, f.ptr)
			}
			g.Expect(m.Renders()).To(BeNumerically("<=", oracle.Renders()))
			if tt.fewer {
				g.Expect(m.Renders()).To(BeNumerically("<", oracle.Renders()), "fewer renders than one per key")
			}
		})
	}
}

func TestMapAgreesWithSoloProbesOnManyComponents(t *testing.T) {
	g := NewWithT(t)
	ch, err := Load(writeBenchChart(t, 6))
	g.Expect(err).NotTo(HaveOccurred())
	oracle, err := Analyze(ch, benchValues(), testRelease)
	g.Expect(err).NotTo(HaveOccurred())
	want := soloOracle(oracle)
	a, err := Analyze(ch, benchValues(), testRelease)
	g.Expect(err).NotTo(HaveOccurred())
	m := a.Map()
	g.Expect(m.Len()).To(Equal(len(want)))
	kinds := map[Kind]int{}
	for _, w := range want {
		got, _ := m.Lookup(w.Object, w.Pointer)
		g.Expect(got).To(Equal(w), "%s %s", w.Object, w.Pointer)
		kinds[got.Kind]++
	}
	g.Expect(kinds).To(HaveLen(4), "every kind occurs: %v", kinds)
	g.Expect(m.Renders()).To(BeNumerically("<", oracle.Renders()/2))
}
