package helmlive

import (
	"testing"

	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// postRendered is the release's Deployment, with two containers.
func postRendered() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"tier": "front"}},
		"spec": map[string]any{"replicas": int64(4), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "web:1"},
			map[string]any{"name": "proxy", "image": "envoy:1", "resources": map[string]any{"limits": map[string]any{"memory": "64Mi"}}},
		}}}},
	}}
}

// TestPatchSets: which line of a post-renderer's patch sets a field, for
// JSON6902 operations and strategic-merge patches.
func TestPatchSets(t *testing.T) {
	const jsonPatch = "- op: replace\n  path: /spec/replicas\n  value: 4\n" +
		"- op: add\n  path: /spec/template/spec/containers/1/resources\n  value:\n    limits:\n      memory: 64Mi\n" +
		"- op: remove\n  path: /spec/template/spec/containers/0/image\n"
	const merge = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n" +
		"        - name: proxy\n          image: envoy:1\n"
	for _, c := range []struct {
		name, patch, pointer string
		line                 int
		sets                 bool
	}{
		{name: "a replace of the field", patch: jsonPatch, pointer: "/spec/replicas", line: 3, sets: true},
		{name: "an add of a map above it", patch: jsonPatch, pointer: "/spec/template/spec/containers/1/resources/limits/memory", line: 8, sets: true},
		{name: "a remove sets nothing", patch: jsonPatch, pointer: "/spec/template/spec/containers/0/image"},
		{name: "a field no operation names", patch: jsonPatch, pointer: "/spec/paused"},
		{name: "a strategic merge, the element by name", patch: merge, pointer: "/spec/template/spec/containers/1/image", line: 10, sets: true},
		{name: "a strategic merge, another element", patch: merge, pointer: "/spec/template/spec/containers/0/image"},
		{name: "not a patch", patch: "{", pointer: "/spec/replicas"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			line, sets := patchSets(c.patch, postRendered(), c.pointer)
			g.Expect(sets).To(Equal(c.sets))
			g.Expect(line).To(Equal(c.line))
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
			g.Expect(targets(kustomize.Patch{Patch: c.patch, Target: c.target}, postRendered())).To(Equal(c.want))
		})
	}
}
