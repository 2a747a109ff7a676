package evaluate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func mfEntry(manager string, at time.Time, fields string) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &t,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// TestAnnotationWriter finds who set the dismiss annotation on a record,
// among the entries of reflux (the spec) and of users (other metadata).
func TestAnnotationWriter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	dismissed := mfEntry("kubectl-annotate", t0.Add(time.Minute), `{"f:metadata":{"f:annotations":{"f:reflux.dev/dismiss":{}}}}`)
	tests := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{"annotated", []metav1.ManagedFieldsEntry{mfEntry("reflux", t0, `{"f:spec":{"f:fields":{}}}`), dismissed}, "kubectl-annotate"},
		{"another annotation only", []metav1.ManagedFieldsEntry{mfEntry("kubectl-annotate", t0, `{"f:metadata":{"f:annotations":{"f:team":{}}}}`)}, ""},
		{"no fields", []metav1.ManagedFieldsEntry{{Manager: "x"}}, ""},
		{"not JSON", []metav1.ManagedFieldsEntry{mfEntry("x", t0, `{`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e, ok := annotationWriter(tt.entries, refluxv1.DismissAnnotation)
			g.Expect(ok).To(Equal(tt.want != ""))
			g.Expect(e.Manager).To(Equal(tt.want))
		})
	}
}

// TestLatestWriter names who last wrote a live object, leaving out the
// writers whose writes are never drift.
func TestLatestWriter(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	benign := func(m string) bool { return m == "reflux" || m == "kustomize-controller" }
	entries := []metav1.ManagedFieldsEntry{
		mfEntry("kustomize-controller", t0, `{}`),
		mfEntry("kubectl-edit", t0.Add(time.Minute), `{}`),
		mfEntry("kubectl-patch", t0.Add(30*time.Second), `{}`),
		mfEntry("reflux", t0.Add(2*time.Minute), `{}`),
	}
	e, ok := latestWriter(entries, benign)
	g.Expect(ok).To(BeTrue())
	g.Expect(e.Manager).To(Equal("kubectl-edit"))
	_, ok = latestWriter(entries[:1], benign)
	g.Expect(ok).To(BeFalse(), "only Flux wrote it")
}

// TestLastWrite finds when Flux last wrote a live object, for
// decide.LostToFlux: the latest of its entries, whatever the operation.
func TestLastWrite(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	flux := func(m string) bool { return m == "kustomize-controller" }
	apply := mfEntry("kustomize-controller", t0.Add(time.Minute), `{}`)
	apply.Operation = metav1.ManagedFieldsOperationApply
	entries := []metav1.ManagedFieldsEntry{
		mfEntry("kustomize-controller", t0, `{}`),
		apply,
		mfEntry("kubectl-edit", t0.Add(2*time.Minute), `{}`),
		{Manager: "kustomize-controller"}, // no time: not counted
	}
	g.Expect(LastWrite(entries, flux)).To(Equal(t0.Add(time.Minute)))
	g.Expect(LastWrite(entries[2:], flux).IsZero()).To(BeTrue(), "Flux never wrote it")
}
