package helmlive

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/release"
)

// testCharts is a mapper's chart cache, as New makes it.
func testCharts(t *testing.T) *chart.Cache {
	t.Helper()
	c, err := chart.NewCache(chartCacheSize)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// releaseOf is version of the release web in apps, of ch with values,
// as HelmRelease owner made it.
func releaseOf(owner string, version int, ch *chartv2.Chart, values map[string]any) *made {
	return &made{owner: types.NamespacedName{Namespace: "apps", Name: owner},
		ref:     release.Ref{Name: "web", Namespace: "apps", Version: version},
		release: &helmrelease.Release{Name: "web", Namespace: "apps", Version: version, Chart: ch, Config: values},
		keys:    keys{found: map[fieldKey]chart.Result{}, asked: map[fieldKey]intake.Key{}}}
}

func loadWebapp(t *testing.T) *chartv2.Chart {
	t.Helper()
	ch, err := chart.Load("../chart/testdata/charts/webapp")
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestMapperMapsOncePerChartAndValues: the keys of a release are found
// by rendering its chart once per chart digest and values hash, not once
// per release version: a new version of the same chart and values (an
// upgrade something else caused, a rollback) and a second HelmRelease
// installing the same release take the first one's analysis, and find
// their fields with no render. Another chart or other values are
// rendered again.
func TestMapperMapsOncePerChartAndValues(t *testing.T) {
	webapp := loadWebapp(t)
	vals := map[string]any{"replicaCount": 3}
	changed := *loadWebapp(t)
	changed.Templates = append(append([]*common.File{}, changed.Templates...),
		&common.File{Name: "templates/extra.yaml", Data: []byte("# a new chart version\n")})
	obj := chart.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web-webapp"}
	k := intake.Key{GVK: deployment, Namespace: "apps", Name: "web-webapp"}
	pointers := []string{"/spec/replicas"}

	tests := []struct {
		name   string
		rel    *made
		mapped bool // rendered again, rather than the first release's analysis
	}{
		{"an upgrade to version 2 of the same chart and values", releaseOf("web", 2, loadWebapp(t), map[string]any{"replicaCount": 3}), false},
		{"a rollback to version 1's chart and values", releaseOf("web", 3, webapp, vals), false},
		{"a second HelmRelease installing the same release", releaseOf("web-next", 4, loadWebapp(t), map[string]any{"replicaCount": 3}), false},
		{"changed values", releaseOf("web", 5, webapp, map[string]any{"replicaCount": 4}), true},
		{"a changed chart", releaseOf("web", 6, &changed, vals), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var said []*made
			m := newMapper(testCharts(t), nil, func(intake.Key) {}, func(r *made, err error) {
				g.Expect(err).NotTo(HaveOccurred())
				said = append(said, r)
			}, logr.Discard())
			defer m.queue.ShutDown()
			first := releaseOf("web", 1, webapp, vals)
			m.results(first, obj, pointers, k)
			m.find(first)
			a := first.keys.analysis
			g.Expect(a).NotTo(BeNil())
			renders := a.Renders()

			g.Expect(m.results(tt.rel, obj, pointers, k)).To(BeEmpty(), "a new release's fields are asked of the mapper")
			g.Expect(m.find(tt.rel)).To(Equal([]intake.Key{k}))
			got := m.results(tt.rel, obj, pointers, k)
			key, ok := got["/spec/replicas"].Key()
			g.Expect(ok).To(BeTrue())
			g.Expect(key.Path).To(Equal("replicaCount"))
			g.Expect(said).To(Equal([]*made{first, tt.rel}), "each release's HelmRelease hears its chart rendered")
			if tt.mapped {
				g.Expect(tt.rel.keys.analysis).NotTo(BeIdenticalTo(a), "analysed again")
				g.Expect(m.charts.Len()).To(Equal(2))
				return
			}
			g.Expect(tt.rel.keys.analysis).To(BeIdenticalTo(a), "the first release's analysis")
			g.Expect(a.Renders()).To(Equal(renders), "no render for the new release")
			g.Expect(m.charts.Len()).To(Equal(1))
		})
	}
}

// TestMapperRemembersAChartThatDoesNotRender: a chart that does not
// render here fails the same way for the next version of the same
// release, and is not rendered again to say so; each release's
// HelmRelease still hears why.
func TestMapperRemembersAChartThatDoesNotRender(t *testing.T) {
	g := NewWithT(t)
	ch, err := chart.Load("testdata/charts/lookup")
	g.Expect(err).NotTo(HaveOccurred())
	var said []error
	m := newMapper(testCharts(t), nil, func(intake.Key) {}, func(_ *made, err error) { said = append(said, err) }, logr.Discard())
	defer m.queue.ShutDown()
	k := intake.Key{GVK: deployment, Namespace: "apps", Name: "web"}
	obj := chart.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web"}
	for v := 1; v <= 2; v++ {
		rel := releaseOf("web", v, ch, nil)
		m.results(rel, obj, []string{"/spec/replicas"}, k)
		m.find(rel)
	}
	g.Expect(said).To(HaveLen(2))
	g.Expect(said[0]).To(MatchError(ContainSubstring("rendering the chart of release apps/web.v1")))
	g.Expect(said[1]).To(MatchError(ContainSubstring("rendering the chart of release apps/web.v2")))
	g.Expect(errors.Unwrap(said[1])).To(BeIdenticalTo(errors.Unwrap(said[0])), "the first version's render failure, kept")
}
