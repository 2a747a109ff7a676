package drift

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDetectImmutable checks a live object someone recreated with another
// value of an immutable field (a Deployment's selector, as `kubectl replace
// --force` does): Flux cannot apply Git over it, and recreates the object
// only when forced by spec.force or kustomize.toolkit.fluxcd.io/force.
func TestDetectImmutable(t *testing.T) {
	tests := []struct {
		name     string
		force    bool
		annotate bool
		recreate bool
	}{
		{name: "not forced"},
		{name: "spec.force", force: true, recreate: true},
		{name: "force annotation in Git", annotate: true, recreate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), deploymentYAML)
			if tt.annotate {
				git.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/force": "Enabled"})
			}
			fluxApply(t, git)
			recreate(t, git, "kubectl-replace", func(u map[string]any) {
				set(t, u, "web2", "spec", "selector", "matchLabels", "app")
				set(t, u, "web2", "spec", "template", "metadata", "labels", "app")
			})

			in := Input{Desired: git, Live: get(t, git), Force: tt.force}
			res, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, res)
			g.Expect(res.Immutable).To(BeTrue())
			g.Expect(res.Recreate).To(Equal(tt.recreate))
			g.Expect(got(g, res.Fields)).To(Equal([]want{
				{Pointer: "/spec/selector/matchLabels/app", ChangeType: "Update", GitValue: `"web"`, LiveValue: `"web2"`,
					FluxReverts: tt.recreate, Manager: "kubectl-replace", Operation: "Update"},
				{Pointer: "/spec/template/metadata/labels/app", ChangeType: "Update", GitValue: `"web"`, LiveValue: `"web2"`,
					FluxReverts: tt.recreate, Manager: "kubectl-replace", Operation: "Update"},
			}))
		})
	}
}

// recreate deletes the live object and creates a changed copy as manager.
func recreate(t *testing.T, like *unstructured.Unstructured, manager string, mutate func(u map[string]any)) {
	t.Helper()
	live := get(t, like)
	if err := k8sClient.Delete(context.Background(), live.DeepCopy()); err != nil {
		t.Fatalf("deleting: %v", err)
	}
	fresh := like.DeepCopy()
	mutate(fresh.Object)
	if err := k8sClient.Create(context.Background(), fresh, client.FieldOwner(manager)); err != nil {
		t.Fatalf("recreating as %s: %v", manager, err)
	}
}
