package postrender

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// rendered is what a chart renders: a Deployment, a ConfigMap, and a
// hook Job.
func rendered() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "ghcr.io/example/web:1.4.2"},
			}}}}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "web-config", "annotations": map[string]any{"team": "shop"}},
			"data":     map[string]any{"greeting": "welcome"}}},
		{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "web-migrate", "annotations": map[string]any{"helm.sh/hook": "pre-upgrade"}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "migrate", "image": "ghcr.io/example/web:1.4.2"},
			}}}}}},
	}
}

// TestApply: post-renderers apply in order, as helm-controller's
// kustomize post-renderer applies them.
func TestApply(t *testing.T) {
	images := []kustomize.Image{{Name: "ghcr.io/example/web", NewName: "registry.local/web", NewTag: "2.0.0"}}
	for _, c := range []struct {
		name      string
		renderers []helmv2.PostRenderer
		strategy  helmv2.PostRenderStrategy
		// want changes rendered() into what is expected.
		want func(objs []*unstructured.Unstructured)
	}{
		{name: "no post-renderer: as rendered", want: func([]*unstructured.Unstructured) {}},
		{name: "a strategic merge, a JSON6902 patch with a target, and images", renderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
			Patches: []kustomize.Patch{
				{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n"},
				{Patch: "- op: add\n  path: /data/motd\n  value: hi\n", Target: &kustomize.Selector{Kind: "ConfigMap", Name: "web-.*"}},
			},
			Images: images,
		}}}, want: func(objs []*unstructured.Unstructured) {
			objs[0].Object["spec"].(map[string]any)["replicas"] = int64(5)
			setImage(objs[0], "registry.local/web:2.0.0")
			objs[1].Object["data"].(map[string]any)["motd"] = "hi"
			setImage(objs[2], "registry.local/web:2.0.0") // combined: hooks too
		}},
		{name: "in order: the second sees what the first made", renderers: []helmv2.PostRenderer{
			{Kustomize: &helmv2.Kustomize{Images: images}},
			{},
			{Kustomize: &helmv2.Kustomize{Images: []kustomize.Image{{Name: "registry.local/web", NewTag: "2.0.1"}}}},
		}, strategy: helmv2.PostRenderStrategySeparate, want: func(objs []*unstructured.Unstructured) {
			setImage(objs[0], "registry.local/web:2.0.1")
			setImage(objs[2], "registry.local/web:2.0.1")
		}},
		{name: "nohooks: a hook is left as rendered", renderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Images: images}}},
			strategy: helmv2.PostRenderStrategyNoHooks, want: func(objs []*unstructured.Unstructured) {
				setImage(objs[0], "registry.local/web:2.0.0")
			}},
		{name: "a renamed object is still known by its source", renderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
			Patches: []kustomize.Patch{{Patch: `[{"op": "replace", "path": "/metadata/name", "value": "web-settings"}]`,
				Target: &kustomize.Selector{Kind: "ConfigMap"}}},
		}}}, want: func(objs []*unstructured.Unstructured) {
			objs[1].SetName("web-settings")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			in := rendered()
			got, err := Apply(in, c.renderers, c.strategy)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(in).To(Equal(rendered()), "the objects given are not changed")
			want := rendered()
			c.want(want)
			g.Expect(got).To(HaveLen(len(want)))
			for i, o := range got {
				g.Expect(o.Source).To(Equal(i))
				g.Expect(o.Object.Object).To(Equal(want[i].Object), want[i].GetName())
			}
		})
	}
}

// TestApplyFails: a patch kustomize cannot apply fails the post-render,
// naming the post-renderer.
func TestApplyFails(t *testing.T) {
	g := NewWithT(t)
	_, err := Apply(rendered(), []helmv2.PostRenderer{{}, {Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{
		{Patch: `[{"op": "replace", "path": "/spec/paused/x", "value": true}]`, Target: &kustomize.Selector{Kind: "Deployment"}},
	}}}}, "")
	g.Expect(err).To(MatchError(ContainSubstring("spec.postRenderers[1].kustomize")))
}

func setImage(o *unstructured.Unstructured, image string) {
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = image
	_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
}
