package helmlive

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	refluxkustomize "github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/release"
)

// TestAPostRenderedFieldIsRefused: where the HelmRelease has
// post-renderers, a field whose value in the release differs from the
// chart's own render was set by one of them: no values key changes it,
// so it is refused by name rather than traced to a key.
func TestAPostRenderedFieldIsRefused(t *testing.T) {
	replicas := chart.Result{Kind: chart.KindValues, Value: int64(2), Template: chart.Location{File: "templates/deployment.yaml", Line: 8},
		Keys: []chart.Key{{Path: "replicaCount", Pointer: "/replicaCount", InUserValues: true}}}
	line := &refluxv1.FieldOrigin{File: "release.yaml", Line: 15, Column: 19, Kind: "values", ValuesKeys: []string{"replicaCount"},
		Template: "templates/deployment.yaml:8"}
	for _, c := range []struct {
		name         string
		postRendered bool
		res          chart.Result
		git          string
		want         *refluxv1.FieldOrigin
	}{
		{name: "the release has what the chart renders", postRendered: true, res: replicas, git: "2", want: line},
		{name: "no post-renderer: the key's line", res: replicas, git: "4", want: line},
		{name: "a post-renderer changed it", postRendered: true, res: replicas, git: "4",
			want: &refluxv1.FieldOrigin{Kind: "post-renderer", Refused: "post-renderer", Template: "templates/deployment.yaml:8",
				Why: "a post-renderer of the HelmRelease (spec.postRenderers) sets the field after the chart renders it; the chart alone renders 2"}},
		{name: "a post-renderer added it", postRendered: true, res: chart.Result{Kind: kindUnknown}, git: `"on"`,
			want: &refluxv1.FieldOrigin{Kind: "post-renderer", Refused: "post-renderer",
				Why: "a post-renderer of the HelmRelease (spec.postRenderers) sets the field after the chart renders it"}},
		{name: "added live, post-renderers or not", postRendered: true, res: chart.Result{Kind: kindUnknown},
			want: &refluxv1.FieldOrigin{Kind: "unknown", Refused: "not-rendered", Why: "the chart does not render this field"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			in := releaseValues(t)
			in.postRendered = c.postRendered
			g.Expect(valuesOrigin(c.res, in, c.git, "6")).To(Equal(c.want))
		})
	}
}

// TestValuesOrigin: a field's origin is the spec.values line of its one
// key, or a refusal that says why and, for a key only the chart's
// defaults set, where to add it.
func TestValuesOrigin(t *testing.T) {
	in := releaseValues(t)
	idx := in.idx
	g := NewWithT(t)
	g.Expect(in.files()).To(HaveLen(2), "the Secret's file, then the ConfigMap's; the targetPath reference has none")
	tmpl := chart.Location{File: "templates/deployment.yaml", Line: 8}
	key := func(path, pointer string, user bool) chart.Key {
		return chart.Key{Path: path, Pointer: pointer, InUserValues: user}
	}
	image := func(repo, tag string) chart.Result {
		return chart.Result{Kind: chart.KindComputed, Keys: []chart.Key{
			{Path: "image.repository", Pointer: "/image/repository", Value: repo},
			{Path: "image.tag", Pointer: "/image/tag", InUserValues: true, Value: tag}}}
	}
	tests := []struct {
		name      string
		res       chart.Result
		idx       *origin.Index
		git, live string
		want      *refluxv1.FieldOrigin
	}{
		{"a key spec.values sets: its line", chart.Result{Kind: chart.KindValues, Keys: []chart.Key{key("replicaCount", "/replicaCount", true)},
			Template: tmpl}, idx, "", "",
			&refluxv1.FieldOrigin{File: "release.yaml", Line: 15, Column: 19, Kind: "values", ValuesKeys: []string{"replicaCount"},
				Template: "templates/deployment.yaml:8"}},
		{"a key only the chart's defaults set: where to add it", chart.Result{Kind: chart.KindChartDefault,
			Keys: []chart.Key{key("resources.limits.memory", "/resources/limits/memory", false)}}, idx, "", "",
			&refluxv1.FieldOrigin{Kind: "chart-default", ValuesKeys: []string{"resources.limits.memory"}, Refused: "chart-default",
				Why: "the chart's values.yaml sets resources.limits.memory; add it under spec.values", EditAt: "release.yaml:15"}},
		{"a key a valuesFrom file sets: its line there", chart.Result{Kind: chart.KindValues,
			Keys: []chart.Key{key("resources.limits.memory", "/resources/limits/memory", true)}, Template: tmpl}, idx, "", "",
			&refluxv1.FieldOrigin{File: "values/web.yaml", Line: 5, Column: 13, Kind: "values-from", ValuesKeys: []string{"resources.limits.memory"},
				Template: "templates/deployment.yaml:8"}},
		{"a key two valuesFrom files set: the last one's line", chart.Result{Kind: chart.KindValues,
			Keys: []chart.Key{key("logLevel", "/logLevel", true)}}, idx, "", "",
			&refluxv1.FieldOrigin{File: "values/secret.yaml", Line: 1, Column: 11, Kind: "values-from", ValuesKeys: []string{"logLevel"}}},
		{"a key the release's values set where no file shows it", chart.Result{Kind: chart.KindValues,
			Keys: []chart.Key{key("extra.settings.mode", "/extra/settings/mode", true)}}, idx, "", "",
			&refluxv1.FieldOrigin{Kind: "values", ValuesKeys: []string{"extra.settings.mode"}, Refused: "values-from",
				Why: "the key is set through spec.valuesFrom, from data no file of the tree holds as it is " +
					"(a targetPath, or a ConfigMap or Secret not generated from a file)"}},
		{"computed from several keys", chart.Result{Kind: chart.KindComputed, Keys: []chart.Key{key("image.repository", "/image/repository", false),
			key("image.tag", "/image/tag", true)}}, idx, "", "",
			&refluxv1.FieldOrigin{Kind: "computed", ValuesKeys: []string{"image.repository", "image.tag"}, Refused: "computed",
				Why: "the chart builds the value from image.repository+image.tag"}},
		{"an image rolled back to another tag: the tag's line", image("ghcr.io/example/web", "1.4.2"), idx,
			`"ghcr.io/example/web:1.4.2"`, `"ghcr.io/example/web:1.4.1"`,
			&refluxv1.FieldOrigin{File: "release.yaml", Line: 17, Column: 12, Kind: "computed", ValuesKeys: []string{"image.tag"},
				Why: "the chart builds the value from image.repository+image.tag; only image.tag differs live"}},
		{"an image from another registry: a key only the chart sets", image("ghcr.io/example/web", "1.4.2"), idx,
			`"ghcr.io/example/web:1.4.2"`, `"mirror.example/web:1.4.2"`,
			&refluxv1.FieldOrigin{Kind: "computed", ValuesKeys: []string{"image.repository", "image.tag"}, Refused: "computed",
				Why: "the chart builds the value from image.repository+image.tag"}},
		{"repository and tag both changed", image("ghcr.io/example/web", "1.4.2"), idx,
			`"ghcr.io/example/web:1.4.2"`, `"mirror.example/web:1.4.1"`,
			&refluxv1.FieldOrigin{Kind: "computed", ValuesKeys: []string{"image.repository", "image.tag"}, Refused: "computed",
				Why: "the chart builds the value from image.repository+image.tag"}},
		{"hard-coded by the chart", chart.Result{Kind: chart.KindTemplateLiteral, Template: tmpl}, idx, "", "",
			&refluxv1.FieldOrigin{Kind: "template-literal", Template: "templates/deployment.yaml:8", Refused: "template-literal",
				Why: "the chart hard-codes the value"}},
		{"not rendered by the chart", chart.Result{Kind: kindUnknown}, idx, "", "",
			&refluxv1.FieldOrigin{Kind: "unknown", Refused: "not-rendered", Why: "the chart does not render this field"}},
		{"no render of the tree yet", chart.Result{Kind: chart.KindValues, Keys: []chart.Key{key("replicaCount", "/replicaCount", true)}}, nil, "", "",
			&refluxv1.FieldOrigin{Kind: "values", ValuesKeys: []string{"replicaCount"}, Refused: "not-indexed",
				Why: "the tree of the Kustomization that applies the HelmRelease is not rendered yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := in
			if tt.idx == nil {
				in = gitValues{}
			}
			g.Expect(valuesOrigin(tt.res, in, tt.git, tt.live)).To(Equal(tt.want))
		})
	}
}

// TestMapperFindsOffTheLivePath: a walk gets nothing for a field not
// found yet, and the mapper is asked; once it has found the key, the
// object is brought back and the next walk gets it, with no render.
func TestMapperFindsOffTheLivePath(t *testing.T) {
	g := NewWithT(t)
	ch, err := chart.Load("../chart/testdata/charts/webapp")
	g.Expect(err).NotTo(HaveOccurred())
	rel := &made{release: &helmrelease.Release{Name: "web", Namespace: "apps", Version: 1, Chart: ch,
		Config: map[string]any{"replicaCount": 3}},
		keys: keys{found: map[fieldKey]chart.Result{}, asked: map[fieldKey]intake.Key{}}}
	var back []intake.Key
	m := newMapper(testCharts(t), nil, func(k intake.Key) { back = append(back, k) }, func(*made, error) {}, logr.Discard())
	defer m.queue.ShutDown()
	k := intake.Key{GVK: deployment, Namespace: "apps", Name: "web-webapp"}
	obj := chart.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web-webapp"}
	pointers := []string{"/spec/replicas", "/spec/paused"}

	g.Expect(m.results(rel, obj, pointers, k)).To(BeEmpty(), "nothing is found on the live path")
	g.Expect(m.queue.Len()).To(Equal(1))
	g.Expect(m.results(rel, obj, pointers, k)).To(BeEmpty())
	g.Expect(m.queue.Len()).To(Equal(1), "asked once")

	for _, k := range m.find(rel) {
		m.requeue(k)
	}
	g.Expect(back).To(Equal([]intake.Key{k}), "the object comes back once")
	got := m.results(rel, obj, pointers, k)
	g.Expect(got).To(HaveKey("/spec/replicas"))
	key, ok := got["/spec/replicas"].Key()
	g.Expect(ok).To(BeTrue())
	g.Expect(key.Path).To(Equal("replicaCount"))
	g.Expect(key.InUserValues).To(BeTrue())
	g.Expect(got["/spec/paused"].Kind).To(Equal(kindUnknown), "a field the chart does not render")
	g.Expect(rel.keys.asked).To(BeEmpty(), "nothing left to ask")
}

// TestAChartThatDoesNotRenderHereIsSaid: a chart that looks the cluster
// up renders for helm-controller and not offline. The mapper says so
// once, for the HelmRelease's condition, and every field asked of it is
// refused by name rather than left waiting.
func TestAChartThatDoesNotRenderHereIsSaid(t *testing.T) {
	g := NewWithT(t)
	ch, err := chart.Load("testdata/charts/lookup")
	g.Expect(err).NotTo(HaveOccurred())
	rel := &made{owner: types.NamespacedName{Namespace: "apps", Name: "web"}, ref: release.Ref{Name: "web", Namespace: "apps", Version: 1},
		release: &helmrelease.Release{Name: "web", Namespace: "apps", Version: 1, Chart: ch},
		keys:    keys{found: map[fieldKey]chart.Result{}, asked: map[fieldKey]intake.Key{}}}
	var said []error
	m := newMapper(testCharts(t), nil, func(intake.Key) {}, func(r *made, err error) {
		g.Expect(r).To(BeIdenticalTo(rel))
		said = append(said, err)
	}, logr.Discard())
	defer m.queue.ShutDown()
	k := intake.Key{GVK: deployment, Namespace: "apps", Name: "web"}
	obj := chart.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web"}

	g.Expect(m.results(rel, obj, []string{"/spec/replicas"}, k)).To(BeEmpty())
	m.find(rel)
	g.Expect(said).To(HaveLen(1))
	g.Expect(said[0]).To(MatchError(And(ContainSubstring("rendering the chart of release apps/web.v1"),
		ContainSubstring("the release's namespace must be looked up"))))
	m.find(rel)
	g.Expect(said).To(HaveLen(1), "said once per release")

	got := m.results(rel, obj, []string{"/spec/replicas", "/spec/paused"}, k)
	g.Expect(rel.keys.asked).To(BeEmpty(), "never asked again")
	g.Expect(got).To(HaveLen(2))
	o := valuesOrigin(got["/spec/replicas"], gitValues{}, "1", "3")
	g.Expect(o.Refused).To(Equal("chart-render-failed"))
	g.Expect(o.Why).To(ContainSubstring("ReverseDrifted condition says why"))
}

// TestValuesFromFileThatDoesNotParse: a valuesFrom file that is no values
// document refuses the keys spec.values and the files after it do not
// set, naming it; a key a later file sets keeps that file's line.
func TestValuesFromFileThatDoesNotParse(t *testing.T) {
	g := NewWithT(t)
	good := chart.ParseValuesFile("values/prod.yaml", []byte("workers: 4\n"))
	bad := chart.ParseValuesFile("values/base.yaml", []byte("- not\n- values\n"))
	in := releaseValues(t)
	in.from = func() []chart.ValuesFile { return []chart.ValuesFile{good, bad} }
	set := func(path, pointer string) chart.Result {
		return chart.Result{Kind: chart.KindValues, Keys: []chart.Key{{Path: path, Pointer: pointer, InUserValues: true}}}
	}
	g.Expect(valuesOrigin(set("workers", "/workers"), in, "", "")).To(Equal(&refluxv1.FieldOrigin{File: "values/prod.yaml",
		Line: 1, Column: 10, Kind: "values-from", ValuesKeys: []string{"workers"}}))
	g.Expect(valuesOrigin(set("logLevel", "/logLevel"), in, "", "")).To(Equal(&refluxv1.FieldOrigin{Kind: "values",
		ValuesKeys: []string{"logLevel"}, Refused: "values-from", Why: "values file values/base.yaml is not a mapping of keys"}))
}

// releaseValues is where testdata/release sets the values of its
// HelmRelease: spec.values, and the files of its valuesFrom.
func releaseValues(t *testing.T) gitValues {
	t.Helper()
	idx, res, err := origin.Build(context.Background(), refluxkustomize.BuildOptions{Root: "testdata/release"})
	if err != nil {
		t.Fatal(err)
	}
	find := func(kind, namespace, name string) (*unstructured.Unstructured, bool) {
		for _, c := range res.Objects {
			if c.GetKind() == kind && c.GetNamespace() == namespace && c.GetName() == name {
				return c, true
			}
		}
		return nil, false
	}
	hr, ok := find("HelmRelease", "apps", "web")
	if !ok {
		t.Fatal("testdata/release renders no HelmRelease apps/web")
	}
	files := observe.ValuesFromFiles(hr, idx, find)
	return gitValues{idx: idx, hr: origin.RefOf(hr), from: func() []chart.ValuesFile { return files }}
}
