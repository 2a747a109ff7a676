package drift

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDetectImmutable checks a Git object that changes an immutable field
// (a Deployment's selector): Flux cannot apply it, and recreates the object
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
			applied := object(t, newNamespace(t), deploymentYAML)
			fluxApply(t, applied)

			git := applied.DeepCopy()
			g.Expect(unstructured.SetNestedField(git.Object, "web2", "spec", "selector", "matchLabels", "app")).To(Succeed())
			g.Expect(unstructured.SetNestedField(git.Object, "web2", "spec", "template", "metadata", "labels", "app")).To(Succeed())
			if tt.annotate {
				git.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/force": "Enabled"})
			}
			res, err := newDetector(t).Detect(context.Background(), Input{Desired: git, Live: get(t, applied), Force: tt.force})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Immutable).To(BeTrue())
			g.Expect(res.Recreate).To(Equal(tt.recreate))
			expected := []want{
				{Pointer: "/spec/selector/matchLabels/app", ChangeType: "Update", GitValue: `"web2"`, LiveValue: `"web"`,
					FluxReverts: tt.recreate, Manager: DefaultFieldOwner, Operation: "Apply"},
				{Pointer: "/spec/template/metadata/labels/app", ChangeType: "Update", GitValue: `"web2"`, LiveValue: `"web"`,
					FluxReverts: tt.recreate, Manager: DefaultFieldOwner, Operation: "Apply"},
			}
			if tt.annotate {
				expected = append([]want{{Pointer: "/metadata/annotations", ChangeType: "Remove",
					GitValue: `{"kustomize.toolkit.fluxcd.io/force":"Enabled"}`, FluxReverts: tt.recreate}}, expected...)
			}
			g.Expect(got(g, res.Fields)).To(Equal(expected))
		})
	}
}
