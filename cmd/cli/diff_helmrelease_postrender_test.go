package cli

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxkustomize "github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/release"
)

// TestHelmTracerPostRenderers: `reflux diff helmrelease` traces a drifted
// field the HelmRelease's post-renderers set in the release to the line
// of the patch that sets it, not to the values key the chart alone reads
// for it; a field they left traces as before. The release's objects are
// testdata/helm-fleet's chart post-rendered by apps/web-patched, as
// helm-controller would have made them.
func TestHelmTracerPostRenderers(t *testing.T) {
	const (
		chartDir = "testdata/helm-fleet/charts/web"
		patched  = "testdata/helm-fleet/apps/web-patched/release.yaml"
	)
	g := NewWithT(t)
	ch, err := chart.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	doc, err := helmReleaseFile(patched)
	g.Expect(err).NotTo(HaveOccurred())
	a, err := chart.Analyze(ch, doc.values.values, doc.release)
	g.Expect(err).NotTo(HaveOccurred())
	post, err := postRender(ch, doc.values.values, doc.release, doc.hr)
	g.Expect(err).NotTo(HaveOccurred())
	obj := func(key chart.ObjectKey) *unstructured.Unstructured {
		o, ok := post.objects[key]
		g.Expect(ok).To(BeTrue(), key.String())
		obj := o.obj.DeepCopy()
		obj.SetNamespace(key.Namespace) // as release.Desired places it
		return obj
	}
	deploy := obj(chart.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web"})
	cm := obj(chart.ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "web-config"})
	const memory = "/spec/template/spec/containers/0/resources/limits/memory"
	update := func(ptr, git, live string) release.Field {
		return release.Field{Pointer: ptr, GitPointer: ptr, ChangeType: "Update", GitValue: git, LiveValue: live}
	}

	// The HelmRelease's file, read as trace reads it, and the tree of a
	// Kustomization that applies it, as diff reads it live.
	idx, res, err := origin.Build(context.Background(), refluxkustomize.BuildOptions{Root: "testdata/helm-fleet/apps/web-patched"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(1))
	git := gitValues{idx: idx, hr: origin.RefOf(res.Objects[0])}
	for _, c := range []struct {
		name  string
		lines valuesLines
		// memory and logLevel are the origins of the two fields.
		memory, logLevel string
	}{
		{name: "the HelmRelease's file", lines: offlineValues{doc: doc}, memory: patched + ":38:37", logLevel: patched + ":47:24"},
		// The index knows the patch's line, not the block's indentation.
		{name: "the Kustomization's tree", lines: git, memory: "release.yaml:38", logLevel: "release.yaml:47"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			tracer := &helmTracer{analysis: a, lines: c.lines, renderers: doc.hr.Spec.PostRenderers}
			g.Expect(tracer.field(deploy, update(memory, `"1Gi"`, `"2Gi"`))).To(Equal(helmDiffField{Pointer: memory, Change: "Update",
				Live: `"2Gi"`, Chart: `"1Gi"`, Kind: "post-renderer", Origin: c.memory, Template: "templates/deployment.yaml:21"}))
			g.Expect(tracer.field(cm, update("/data/logLevel", `"warn"`, `"debug"`))).To(Equal(helmDiffField{Pointer: "/data/logLevel",
				Change: "Update", Live: `"debug"`, Chart: `"warn"`, Kind: "post-renderer", Origin: c.logLevel,
				Template: "templates/_helpers.tpl:6"}))
			// Not post-rendered: its values key, as without post-renderers.
			f := tracer.field(deploy, update("/spec/replicas", "3", "5"))
			g.Expect([]string{f.Kind, f.Origin}).To(Equal([]string{"values", pathIn(c.lines, patched, "release.yaml") + ":19:19"}))
		})
	}
	t.Run("a field no post-renderer entry is found to set is refused as post-renderer", func(t *testing.T) {
		g := NewWithT(t)
		tracer := &helmTracer{analysis: a, lines: offlineValues{doc: doc}, renderers: doc.hr.Spec.PostRenderers}
		f := tracer.field(deploy, update("/spec/replicas", "4", "5"))
		g.Expect(f.Kind).To(Equal("post-renderer"))
		g.Expect(f.Refused).To(Equal("post-renderer: a post-renderer of the HelmRelease (spec.postRenderers) sets the field " +
			"after the chart renders it; the chart alone renders 3"))
	})
}

// pathIn is the file as lines names it: the file trace was given, or the
// file in the tree.
func pathIn(lines valuesLines, file, inTree string) string {
	if _, ok := lines.(gitValues); ok {
		return inTree
	}
	return file
}
