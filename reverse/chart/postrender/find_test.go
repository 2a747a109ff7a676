package postrender

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// postRendered is the release's Deployment, with two containers.
func postRendered() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"tier": "front"}},
		"spec": map[string]any{"replicas": int64(4), "template": map[string]any{"spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "app", "image": "registry.local:5000/web:2"},
				map[string]any{"name": "proxy", "image": "envoy:1", "resources": map[string]any{"limits": map[string]any{"memory": "64Mi"}}},
			},
			"initContainers": []any{map[string]any{"name": "migrate", "image": "web@sha256:abc"}},
		}}},
	}}
}

const (
	jsonPatch = "- op: replace\n  path: /spec/replicas\n  value: 4\n" +
		"- op: add\n  path: /spec/template/spec/containers/1/resources\n  value:\n    limits:\n      memory: 64Mi\n" +
		"- op: remove\n  path: /spec/template/spec/containers/0/image\n"
	mergePatch = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n" +
		"        - name: proxy\n          image: envoy:1\n"
)

// TestPatchSets: which line and column of a post-renderer's patch set a
// field, for JSON6902 operations and strategic-merge patches.
func TestPatchSets(t *testing.T) {
	for _, c := range []struct {
		name, patch, pointer string
		line, column         int
		sets                 bool
	}{
		{name: "a replace of the field", patch: jsonPatch, pointer: "/spec/replicas", line: 3, column: 10, sets: true},
		{name: "an add of a map above it", patch: jsonPatch, pointer: "/spec/template/spec/containers/1/resources/limits/memory",
			line: 8, column: 15, sets: true},
		{name: "a remove sets nothing", patch: jsonPatch, pointer: "/spec/template/spec/containers/0/image"},
		{name: "a field no operation names", patch: jsonPatch, pointer: "/spec/paused"},
		{name: "a strategic merge, the element by name", patch: mergePatch, pointer: "/spec/template/spec/containers/1/image",
			line: 10, column: 18, sets: true},
		{name: "a strategic merge, another element", patch: mergePatch, pointer: "/spec/template/spec/containers/0/image"},
		{name: "a JSON6902 patch in flow style", patch: `[{"op": "replace", "path": "/spec/replicas", "value": 4}]`,
			pointer: "/spec/replicas", line: 1, column: 55, sets: true},
		{name: "not a patch", patch: "{", pointer: "/spec/replicas"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			n, sets := patchSets(c.patch, postRendered(), c.pointer)
			g.Expect(sets).To(Equal(c.sets))
			if c.sets {
				g.Expect([]int{n.Line, n.Column}).To(Equal([]int{c.line, c.column}))
			}
		})
	}
}

// TestTargets: a post-renderer's patch applies as kustomize selects.
func TestTargets(t *testing.T) {
	for _, c := range []struct {
		name   string
		target *kustomize.Selector
		patch  string
		want   bool
	}{
		{name: "by kind", target: &kustomize.Selector{Kind: "Deployment"}, want: true},
		{name: "another kind", target: &kustomize.Selector{Kind: "StatefulSet"}},
		{name: "a name pattern", target: &kustomize.Selector{Kind: "Deployment", Name: "w.*"}, want: true},
		{name: "a name pattern is anchored", target: &kustomize.Selector{Name: "we"}},
		{name: "group and version", target: &kustomize.Selector{Group: "apps", Version: "v1", Kind: "Deployment"}, want: true},
		{name: "a label selector", target: &kustomize.Selector{LabelSelector: "tier=front"}, want: true},
		{name: "a label selector it fails", target: &kustomize.Selector{LabelSelector: "tier=back"}},
		{name: "no target: the patch names it", patch: "kind: Deployment\nmetadata:\n  name: web\n", want: true},
		{name: "no target: the patch names another", patch: "kind: Deployment\nmetadata:\n  name: api\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Targets(kustomize.Patch{Patch: c.patch, Target: c.target}, postRendered())).To(Equal(c.want))
		})
	}
}

// TestFind: the entry that sets a field is the last to apply.
func TestFind(t *testing.T) {
	deployments := &kustomize.Selector{Kind: "Deployment"}
	renderers := []helmv2.PostRenderer{
		{Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{{Patch: jsonPatch, Target: deployments}}}},
		{}, // no kustomize: skipped, but counted
		{Kustomize: &helmv2.Kustomize{
			Patches: []kustomize.Patch{
				{Patch: mergePatch},
				{Patch: `[{"op": "replace", "path": "/spec/replicas", "value": 4}]`, Target: &kustomize.Selector{Kind: "StatefulSet"}},
			},
			Images: []kustomize.Image{
				{Name: "ghcr.io/example/web", NewName: "registry.local:5000/web", NewTag: "2"},
				{Name: "web", Digest: "sha256:abc"},
				{Name: "envoy"}, // changes nothing
			},
		}},
	}
	for _, c := range []struct {
		name, pointer string
		want          Setter
		found         bool
	}{
		{name: "an earlier post-renderer's patch", pointer: "/spec/replicas", found: true,
			want: Setter{Path: "/spec/postRenderers/0/kustomize/patches/0/patch", Line: 3, Column: 10, Block: true}},
		{name: "a later post-renderer's patch, with no target", pointer: "/spec/template/spec/containers/1/image", found: true,
			want: Setter{Path: "/spec/postRenderers/2/kustomize/patches/0/patch", Line: 10, Column: 18, Block: true}},
		{name: "an image's new name and tag", pointer: "/spec/template/spec/containers/0/image", found: true,
			want: Setter{Path: "/spec/postRenderers/2/kustomize/images/0/newTag"}},
		{name: "an init container's digest", pointer: "/spec/template/spec/initContainers/0/image", found: true,
			want: Setter{Path: "/spec/postRenderers/2/kustomize/images/1/digest"}},
		{name: "a field nothing sets", pointer: "/metadata/labels/tier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			s, found := Find(renderers, postRendered(), c.pointer)
			g.Expect(found).To(Equal(c.found))
			g.Expect(s).To(Equal(c.want))
		})
	}
}

// TestSetterAt: a block's line is counted from its key; a one-line
// patch is at its value.
func TestSetterAt(t *testing.T) {
	g := NewWithT(t)
	line, col := Setter{Line: 3, Column: 10, Block: true}.At(20, 14)
	g.Expect([]int{line, col}).To(Equal([]int{23, 0}))
	line, col = Setter{Line: 1, Column: 54}.At(20, 14)
	g.Expect([]int{line, col}).To(Equal([]int{20, 14}))
}

// TestImageName: an image's name, split as kustomize splits it.
func TestImageName(t *testing.T) {
	for ref, want := range map[string]string{
		"web":                          "web",
		"web:1":                        "web",
		"web@sha256:abc":               "web",
		"web:1@sha256:abc":             "web",
		"registry.local:5000/web":      "registry.local:5000/web",
		"registry.local:5000/web:2":    "registry.local:5000/web",
		"ghcr.io/example/web:1.4.2":    "ghcr.io/example/web",
		"ghcr.io/example/web@sha256:x": "ghcr.io/example/web",
	} {
		t.Run(ref, func(t *testing.T) {
			NewWithT(t).Expect(imageName(ref)).To(Equal(want))
		})
	}
}
