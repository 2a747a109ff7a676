package drift

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestUnchanged holds the resync's prefilter to Detect: whenever it says
// an object cannot drift, the dry run must agree, and every way a human
// can drift an object must send it to the dry run.
func TestUnchanged(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		change   func(t *testing.T, git *unstructured.Unstructured)
		want     bool
	}{
		{name: "ConfigMap as Flux applied it", manifest: configMapYAML, want: true},
		{name: "Deployment as Flux applied it, server defaults and all", manifest: deploymentYAML, want: true},
		{name: "key changed by kubectl edit", manifest: configMapYAML, change: func(t *testing.T, git *unstructured.Unstructured) {
			edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "9", "data", "a") })
		}},
		{name: "key removed by kubectl edit", manifest: configMapYAML, change: func(t *testing.T, git *unstructured.Unstructured) {
			edit(t, git, "kubectl-edit", func(u map[string]any) { delete(u["data"].(map[string]any), "b") })
		}},
		{name: "key removed by an allowed manager", manifest: configMapYAML, change: func(t *testing.T, git *unstructured.Unstructured) {
			edit(t, git, "kube-controller-manager", func(u map[string]any) { delete(u["data"].(map[string]any), "b") })
		}},
		{name: "key added by another manager", manifest: configMapYAML, change: func(t *testing.T, git *unstructured.Unstructured) {
			edit(t, git, "legacy-app", func(u map[string]any) { set(t, u, "3", "data", "c") })
		}},
		{name: "replicas scaled by the control plane", manifest: deploymentYAML, change: func(t *testing.T, git *unstructured.Unstructured) {
			edit(t, git, "kube-controller-manager", func(u map[string]any) { set(t, u, int64(7), "spec", "replicas") })
		}},
		{name: "held by reflux", manifest: configMapYAML, change: func(t *testing.T, git *unstructured.Unstructured) {
			edit(t, git, "reflux", func(u map[string]any) {
				set(t, u, "disabled", "metadata", "annotations", "kustomize.toolkit.fluxcd.io/reconcile")
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), tt.manifest)
			fluxApply(t, git)
			if tt.change != nil {
				tt.change(t, git)
			}
			d := newDetector(t)
			in := Input{Desired: git, Live: get(t, git)}
			g.Expect(d.Unchanged(in)).To(Equal(tt.want))
			res, err := d.Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want {
				g.Expect(res.Fields).To(BeEmpty(), "Unchanged said no drift; the dry run disagrees")
			}
		})
	}
}
