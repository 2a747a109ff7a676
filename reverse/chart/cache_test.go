package chart

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// countingCache is a Cache whose analyses are counted, and real.
func countingCache(t *testing.T, max int) (*Cache, *atomic.Int32) {
	t.Helper()
	c, err := NewCache(max)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	c.analyze = func(ch *chartv2.Chart, values map[string]any, rel Release) (*Analysis, error) {
		n.Add(1)
		return Analyze(ch, values, rel)
	}
	return c, &n
}

// withTemplate is ch with one more template.
func withTemplate(ch *chartv2.Chart, name, text string) *chartv2.Chart {
	c := *ch
	c.Templates = append(append([]*common.File{}, ch.Templates...), &common.File{Name: name, Data: []byte(text)})
	return &c
}

// TestCacheAnalyzesOncePerKey: a release of the same chart and values,
// whatever its version, takes the Analysis made for the first, renders
// included; another chart, other values or another namespace are
// analysed anew.
func TestCacheAnalyzesOncePerKey(t *testing.T) {
	g := NewWithT(t)
	webapp := loadChart(t, "webapp")
	vals := releaseValues(t)
	c, analyses := countingCache(t, 8)
	first, err := c.Analyze(webapp, vals, testRelease)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = first.Find(deployment, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	renders := first.Renders()

	reloaded := loadChart(t, "webapp") // the same chart, read again from the release
	changedVals := releaseValues(t)
	changedVals["replicaCount"] = 7
	tests := []struct {
		name   string
		ch     *chartv2.Chart
		values map[string]any
		rel    Release
		again  bool
	}{
		{"the same release", webapp, vals, testRelease, false},
		{"an upgrade to version 2", reloaded, releaseValues(t), Release{Name: "shop", Namespace: "prod", Revision: 2, IsUpgrade: true}, false},
		{"a rollback to version 5", reloaded, releaseValues(t), Release{Name: "shop", Namespace: "prod", Revision: 5, IsUpgrade: true}, false},
		{"changed values", webapp, changedVals, testRelease, true},
		{"a changed chart", withTemplate(webapp, "templates/extra.yaml", "# nothing\n"), vals, testRelease, true},
		{"another namespace", webapp, vals, Release{Name: "shop", Namespace: "dev"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := analyses.Load()
			a, err := c.Analyze(tt.ch, tt.values, tt.rel)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.again {
				g.Expect(analyses.Load()).To(Equal(before+1), "analysed again")
				g.Expect(a).NotTo(BeIdenticalTo(first))
				return
			}
			g.Expect(analyses.Load()).To(Equal(before), "not analysed again")
			g.Expect(a).To(BeIdenticalTo(first))
			_, err = a.Find(deployment, "/spec/replicas")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.Renders()).To(Equal(renders), "what was found is not rendered again")
		})
	}
}

// TestCacheKeepsWhyAChartDoesNotRender: a chart that fails for some
// values fails again for them, and is not rendered again to say so.
func TestCacheKeepsWhyAChartDoesNotRender(t *testing.T) {
	g := NewWithT(t)
	c, analyses := countingCache(t, 4)
	broken := loadChart(t, "broken")
	_, err1 := c.Analyze(broken, nil, testRelease)
	g.Expect(err1).To(MatchError(ErrRender))
	_, err2 := c.Analyze(broken, nil, Release{Name: "shop", Namespace: "prod", Revision: 3, IsUpgrade: true})
	g.Expect(err2).To(BeIdenticalTo(err1))
	g.Expect(analyses.Load()).To(Equal(int32(1)))
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	g := NewWithT(t)
	c, analyses := countingCache(t, 2)
	webapp := loadChart(t, "webapp")
	rel := func(ns string) Release { return Release{Name: "shop", Namespace: ns} }
	analyse := func(ns string) *Analysis {
		a, err := c.Analyze(webapp, nil, rel(ns))
		g.Expect(err).NotTo(HaveOccurred())
		return a
	}
	a := analyse("a")
	analyse("b")
	g.Expect(analyse("a")).To(BeIdenticalTo(a), "a is now the most recently used")
	analyse("d")
	g.Expect(c.Len()).To(Equal(2))
	g.Expect(analyses.Load()).To(Equal(int32(3)))

	g.Expect(analyse("a")).To(BeIdenticalTo(a), "a is kept")
	g.Expect(analyses.Load()).To(Equal(int32(3)))
	analyse("b")
	g.Expect(analyses.Load()).To(Equal(int32(4)), "b was used least recently, and dropped")
	g.Expect(c.Len()).To(Equal(2))
}

func TestNewCacheRefusesNoRoom(t *testing.T) {
	_, err := NewCache(0)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("at least 1")))
}

// TestCacheConcurrentUse: callers asking for one key at once share one
// analysis; the cache stays bounded however many keys come.
func TestCacheConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	c, err := NewCache(8)
	g.Expect(err).NotTo(HaveOccurred())
	var analyses atomic.Int32
	release := make(chan struct{})
	c.analyze = func(*chartv2.Chart, map[string]any, Release) (*Analysis, error) {
		analyses.Add(1)
		<-release // every caller is in by now, or waits on this one
		return &Analysis{}, nil
	}
	webapp := loadChart(t, "webapp")
	var wg sync.WaitGroup
	got := make([]*Analysis, 8)
	for i := range got {
		wg.Go(func() {
			a, err := c.Analyze(webapp, map[string]any{"k": "shared"}, testRelease)
			if err != nil {
				t.Error(err)
			}
			got[i] = a
		})
	}
	close(release)
	wg.Wait()
	g.Expect(analyses.Load()).To(Equal(int32(1)))
	for _, a := range got {
		g.Expect(a).To(BeIdenticalTo(got[0]))
	}

	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				if _, err := c.Analyze(webapp, map[string]any{"k": fmt.Sprint(w, i)}, testRelease); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	g.Expect(c.Len()).To(Equal(8), "bounded however many were added")
	g.Expect(analyses.Load()).To(Equal(int32(101)))
}

func TestKeyOf(t *testing.T) {
	webapp := loadChart(t, "webapp")
	umbrella := loadChart(t, "umbrella")
	vals := map[string]any{"replicaCount": 3}
	v2 := Release{Name: "shop", Namespace: "prod", Revision: 2, IsUpgrade: true}
	readsRev := withTemplate(webapp, "templates/rev.yaml", "# revision {{ .Release.Revision }}\n")
	readsWhole := withTemplate(webapp, "templates/rel.yaml", "# {{ toYaml .Release }}\n")
	touched := *webapp
	touched.ModTime = touched.ModTime.AddDate(1, 0, 0)
	dep := umbrella.Dependencies()[0]
	changedDep := withTemplate(dep, "templates/extra.yaml", "# nothing\n")
	otherUmbrella := *umbrella
	otherUmbrella.SetDependencies(append([]*chartv2.Chart{changedDep}, umbrella.Dependencies()[1:]...)...)

	type in struct {
		ch   *chartv2.Chart
		vals map[string]any
		rel  Release
	}
	tests := []struct {
		name string
		a, b in
		same bool
	}{
		{"a new version of a chart that reads no revision", in{webapp, vals, testRelease}, in{webapp, vals, v2}, true},
		{"the chart read again, modification time aside", in{webapp, vals, testRelease}, in{&touched, vals, testRelease}, true},
		{"a template reads .Release.Revision", in{readsRev, vals, testRelease}, in{readsRev, vals, v2}, false},
		{"a template reads .Release whole", in{readsWhole, vals, testRelease}, in{readsWhole, vals, v2}, false},
		{"a value tpl may render reads it", in{webapp, map[string]any{"note": "{{ .Release.IsUpgrade }}"}, testRelease},
			in{webapp, map[string]any{"note": "{{ .Release.IsUpgrade }}"}, v2}, false},
		{"other values", in{webapp, vals, testRelease}, in{webapp, map[string]any{"replicaCount": 4}, testRelease}, false},
		{"another release name", in{webapp, vals, testRelease}, in{webapp, vals, Release{Name: "cart", Namespace: "prod"}}, false},
		{"a dependency changed", in{umbrella, vals, testRelease}, in{&otherUmbrella, vals, testRelease}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ka, err := KeyOf(tt.a.ch, tt.a.vals, tt.a.rel)
			g.Expect(err).NotTo(HaveOccurred())
			kb, err := KeyOf(tt.b.ch, tt.b.vals, tt.b.rel)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ka.ChartDigest).To(HavePrefix("sha256:"))
			if tt.same {
				g.Expect(kb).To(Equal(ka))
			} else {
				g.Expect(kb).NotTo(Equal(ka))
			}
		})
	}

	_, err := KeyOf(webapp, map[string]any{"bad": make(chan int)}, testRelease)
	NewWithT(t).Expect(errors.Is(err, ErrValues)).To(BeTrue())
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
