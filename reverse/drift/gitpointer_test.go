package drift

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDetectGitPointer checks that every field is also placed in the
// rendered object, where live and Git order a list differently.
func TestDetectGitPointer(t *testing.T) {
	type placed struct{ Pointer, GitPointer, ChangeType string }
	reorder := func(u map[string]any) []any {
		c := containers(u)
		return []any{c[1], c[0]}
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, u map[string]any)
		want   []placed
	}{
		{
			name: "env var added to a container reordered live",
			mutate: func(t *testing.T, u map[string]any) {
				c := reorder(u)
				app := c[1].(map[string]any)
				app["env"] = append(app["env"].([]any), map[string]any{"name": "DEBUG", "value": "1"})
				set(t, u, c, "spec", "template", "spec", "containers")
			},
			want: []placed{{"/spec/template/spec/containers/1/env/1", "/spec/template/spec/containers/0/env/-", "Add"}},
		},
		{
			name: "image changed in a container reordered live",
			mutate: func(t *testing.T, u map[string]any) {
				c := reorder(u)
				set(t, c[0].(map[string]any), "ghcr.io/example/proxy:2.0.1", "image")
				set(t, u, c, "spec", "template", "spec", "containers")
			},
			want: []placed{{"/spec/template/spec/containers/0/image", "/spec/template/spec/containers/1/image", "Update"}},
		},
		{
			name: "container replaced",
			mutate: func(t *testing.T, u map[string]any) {
				c := containers(u)
				set(t, u, []any{c[0], map[string]any{"name": "debug", "image": "busybox"}}, "spec", "template", "spec", "containers")
			},
			want: []placed{
				{"/spec/template/spec/containers/1", "/spec/template/spec/containers/1", "Remove"},
				{"/spec/template/spec/containers/1", "/spec/template/spec/containers/-", "Add"},
			},
		},
		{
			name: "first annotation",
			mutate: func(t *testing.T, u map[string]any) {
				set(t, u, "x", "metadata", "annotations", "example.com/a")
			},
			want: []placed{{"/metadata/annotations/example.com~1a", "/metadata/annotations/example.com~1a", "Add"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), deploymentYAML)
			fluxApply(t, git)
			edit(t, git, "kubectl-edit", func(u map[string]any) { tt.mutate(t, u) })
			in := Input{Desired: git, Live: get(t, git)}
			res, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, res)
			out := []placed{}
			for _, f := range res.Fields {
				out = append(out, placed{f.Pointer, f.GitPointer, string(f.ChangeType)})
			}
			g.Expect(out).To(Equal(tt.want))
		})
	}
}
