package drift

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestWritten(t *testing.T) {
	at := func(sec int) *metav1.Time {
		tm := metav1.NewTime(time.Unix(1_700_000_000+int64(sec), 0).UTC())
		return &tm
	}
	entry := func(manager string, op metav1.ManagedFieldsOperationType, sec int, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: at(sec), APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	flux := entry(DefaultFieldOwner, metav1.ManagedFieldsOperationApply, 1, `{"f:data":{"f:A":{},"f:B":{}}}`)
	cases := []struct {
		name    string
		kind    string
		entries []metav1.ManagedFieldsEntry
		// wantManager is "" when no writer's writes can be drift.
		wantManager string
		want        []refluxv1.WrittenField
	}{{
		name:    "only Flux wrote: nothing pending",
		kind:    "ConfigMap",
		entries: []metav1.ManagedFieldsEntry{flux},
	}, {
		name:        "kubectl edit: the keys it holds, with their live values",
		kind:        "ConfigMap",
		entries:     []metav1.ManagedFieldsEntry{flux, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, 5, `{"f:data":{"f:B":{},"f:C":{}}}`)},
		wantManager: "kubectl-edit",
		want:        []refluxv1.WrittenField{{Pointer: "/data/B", LiveValue: `"live-b"`}, {Pointer: "/data/C", LiveValue: `"live-c"`}},
	}, {
		name: "the latest writer whose writes can be drift, not an allow-listed one after it",
		kind: "ConfigMap",
		entries: []metav1.ManagedFieldsEntry{flux,
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, 5, `{"f:data":{"f:C":{}}}`),
			entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, 9, `{"f:data":{"f:A":{}}}`)},
		wantManager: "kubectl-edit",
		want:        []refluxv1.WrittenField{{Pointer: "/data/C", LiveValue: `"live-c"`}},
	}, {
		name: "a field the writer lists but the object lacks is left out",
		kind: "ConfigMap",
		entries: []metav1.ManagedFieldsEntry{flux,
			entry("helm", metav1.ManagedFieldsOperationUpdate, 5, `{"f:data":{"f:GONE":{},"f:C":{}}}`)},
		wantManager: "helm",
		want:        []refluxv1.WrittenField{{Pointer: "/data/C", LiveValue: `"live-c"`}},
	}, {
		name:        "a Secret's values never reach the record",
		kind:        "Secret",
		entries:     []metav1.ManagedFieldsEntry{flux, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, 5, `{"f:data":{"f:C":{}}}`)},
		wantManager: "kubectl-edit",
		want:        []refluxv1.WrittenField{{Pointer: "/data/C", LiveValue: `"***"`}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			live := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": tc.kind,
				"metadata": map[string]any{"name": "app", "namespace": "shop"},
				"data":     map[string]any{"A": "a", "B": "live-b", "C": "live-c"},
			}}
			live.SetManagedFields(tc.entries)
			mod, fields, err := newDetector(t).Written(live)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.wantManager == "" {
				g.Expect(mod).To(BeNil())
				g.Expect(fields).To(BeEmpty())
				return
			}
			g.Expect(mod).NotTo(BeNil())
			g.Expect(mod.Manager).To(Equal(tc.wantManager))
			g.Expect(mod.Time).NotTo(BeNil())
			g.Expect(fields).To(Equal(tc.want))
		})
	}
}
