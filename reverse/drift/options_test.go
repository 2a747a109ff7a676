package drift

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStripRules checks the managers Flux folds into its own before it
// applies, as kustomize-controller v1.9.6 configures its cleanup.
func TestStripRules(t *testing.T) {
	apply, update := metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	tests := []struct {
		manager, subresource string
		op                   metav1.ManagedFieldsOperationType
		want                 bool
	}{
		{manager: "kubectl", op: apply, want: true},
		{manager: "kubectl", op: update, want: true},
		{manager: "kubectl-edit", op: update, want: true},
		{manager: "kubectl-client-side-apply", op: update, want: true},
		{manager: "kubectl", op: update, subresource: "scale"},
		{manager: "before-first-apply", op: update, want: true},
		{manager: "before-first-apply", op: apply},
		{manager: "kustomize-controller", op: update, want: true},
		{manager: "kustomize-controller", op: apply},
		{manager: "legacy-app", op: update},
		{manager: "helm", op: update},
	}
	o, err := newOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.manager+"/"+string(tt.op)+"/"+tt.subresource, func(t *testing.T) {
			g := NewWithT(t)
			e := metav1.ManagedFieldsEntry{Manager: tt.manager, Operation: tt.op, Subresource: tt.subresource}
			g.Expect(o.stripped(e)).To(Equal(tt.want))
		})
	}
}

func TestNewOptions(t *testing.T) {
	g := NewWithT(t)

	o, err := newOptions([]Option{WithFieldOwner("flux"), WithOverrideManagers("helm")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.stripped(metav1.ManagedFieldsEntry{Manager: "flux", Operation: metav1.ManagedFieldsOperationUpdate})).To(BeTrue())
	g.Expect(o.stripped(metav1.ManagedFieldsEntry{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply})).To(BeTrue())
	g.Expect(o.isFlux(metav1.ManagedFieldsEntry{Manager: "flux", Operation: metav1.ManagedFieldsOperationApply})).To(BeTrue())
	g.Expect(o.allowed).To(HaveKey("kube-controller-manager"))

	o, err = newOptions([]Option{WithAllowedManagers("only"), WithStripRules(ManagerRule{Name: "x", Exact: true})})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.allowed).To(Equal(map[string]bool{"only": true}))
	g.Expect(o.stripped(metav1.ManagedFieldsEntry{Manager: "x", Operation: metav1.ManagedFieldsOperationApply})).To(BeTrue())
	g.Expect(o.stripped(metav1.ManagedFieldsEntry{Manager: "xy", Operation: metav1.ManagedFieldsOperationApply})).To(BeFalse())
	g.Expect(o.stripped(metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply})).To(BeFalse())

	_, err = newOptions([]Option{WithFieldOwner("")})
	g.Expect(err).To(HaveOccurred())
	_, err = newOptions([]Option{WithOverrideManagers("")})
	g.Expect(err).To(HaveOccurred())
	_, err = New(nil)
	g.Expect(err).To(HaveOccurred())
}
