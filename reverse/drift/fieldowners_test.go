package drift

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestFieldOwnersTellFluxFromAPerson: after a live change, Git's value
// comes back either from a person (an Update that keeps the field theirs)
// or from Flux's forced apply (which takes it). The values are the same;
// the real apiserver's managedFields tell them apart.
func TestFieldOwnersTellFluxFromAPerson(t *testing.T) {
	d := newDetector(t)
	for _, tt := range []struct {
		name         string
		back         func(t *testing.T, git *unstructured.Unstructured)
		pointers     []string
		flux, writer bool
	}{
		{name: "a person puts Git's value back",
			back: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "1", "data", "a") })
			},
			pointers: []string{"/data/a"}, writer: true},
		{name: "Flux's apply puts Git's value back",
			back:     func(t *testing.T, git *unstructured.Unstructured) { fluxApply(t, git) },
			pointers: []string{"/data/a"}, flux: true},
		{name: "the field is gone live: neither",
			back: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { unstructured.RemoveNestedField(u, "data", "c") })
			},
			pointers: []string{"/data/c"}},
		{name: "an allow-listed manager's field: neither",
			back: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kube-controller-manager", func(u map[string]any) { set(t, u, "x", "data", "d") })
			},
			pointers: []string{"/data/d"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), configMapYAML)
			fluxApply(t, git)
			// The live change: a changed key and an added one.
			edit(t, git, "kubectl-edit", func(u map[string]any) {
				set(t, u, "10", "data", "a")
				set(t, u, "3", "data", "c")
			})
			tt.back(t, git)
			flux, writer, err := d.FieldOwners(get(t, git), tt.pointers)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(flux).To(Equal(tt.flux), "Flux owns one")
			g.Expect(writer).To(Equal(tt.writer), "a writer owns one")
		})
	}
}
