package drift

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestWriters(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	entry := func(manager string, op metav1.ManagedFieldsOperationType, at metav1.Time, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: &at,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	flux := entry("kustomize-controller", metav1.ManagedFieldsOperationApply, t0, `{"f:data":{"f:a":{}}}`)
	obj := func(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetManagedFields(entries)
		return u
	}
	tests := []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     []string
	}{
		{"a new manager wrote", obj(flux), obj(flux, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, t1, `{"f:data":{"f:b":{}}}`)),
			[]string{"kubectl-edit"}},
		{"Flux re-applied", obj(flux), obj(entry("kustomize-controller", metav1.ManagedFieldsOperationApply, t1, `{"f:data":{"f:a":{}}}`)),
			[]string{"kustomize-controller"}},
		{"a manager gained fields within the same second", obj(flux), obj(entry("kustomize-controller", metav1.ManagedFieldsOperationApply, t0, `{"f:data":{"f:a":{},"f:c":{}}}`)),
			[]string{"kustomize-controller"}},
		{"an existing manager wrote again", obj(flux, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, t0, `{}`)),
			obj(flux, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, t1, `{}`)), []string{"kubectl-edit"}},
		{"same manager, other operation", obj(flux), obj(flux, entry("kustomize-controller", metav1.ManagedFieldsOperationUpdate, t0, `{}`)),
			[]string{"kustomize-controller"}},
		{"only a removal: no entry changed", obj(flux, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, t0, `{"f:data":{"f:b":{}}}`)),
			obj(flux), nil},
		{"no old object: every entry", nil, obj(flux), []string{"kustomize-controller"}},
		{"a key Flux applied removed by kubectl patch: Flux only lost it", obj(entry("kustomize-controller", metav1.ManagedFieldsOperationApply, t0, `{"f:data":{"f:a":{},"f:b":{}}}`)),
			obj(flux), nil},
		{"Flux lost one field and gained another in the same second: it wrote", obj(entry("kustomize-controller", metav1.ManagedFieldsOperationApply, t0, `{"f:data":{"f:b":{}}}`)),
			obj(flux), []string{"kustomize-controller"}},
		{"unreadable fields count as written", obj(entry("kustomize-controller", metav1.ManagedFieldsOperationApply, t0, `{"f:data":{"f:a":{},"f:b":{}}}`)),
			obj(entry("kustomize-controller", metav1.ManagedFieldsOperationApply, t0, `{"bogus":1}`)), []string{"kustomize-controller"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []string
			for _, e := range Writers(tt.old, tt.cur) {
				got = append(got, e.Manager)
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestManagerClasses(t *testing.T) {
	g := NewWithT(t)
	d, err := New(k8sClient, WithOverrideManagers("legacy-deployer"))
	g.Expect(err).NotTo(HaveOccurred())
	for manager, reverted := range map[string]bool{
		"kubectl": true, "kubectl-edit": true, "kubectl-client-side-apply": true, "before-first-apply": true,
		"kustomize-controller": true, "legacy-deployer": true, "legacy-app": false, "reflux": false,
		"kube-controller-manager": false,
	} {
		g.Expect(d.Reverted(manager)).To(Equal(reverted), manager)
	}
	g.Expect(d.Allowed("kube-controller-manager")).To(BeTrue())
	g.Expect(d.Allowed("reflux")).To(BeTrue())
	g.Expect(d.Allowed("kubectl-edit")).To(BeFalse())
	g.Expect(d.FluxOwned("kustomize-controller")).To(BeTrue())
	g.Expect(d.FluxOwned("reflux")).To(BeFalse())
}

func TestStatusOnly(t *testing.T) {
	obj := func(rv string, spec, status map[string]any, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease"}}
		u.SetName("app")
		u.SetResourceVersion(rv)
		u.SetLabels(labels)
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "reflux", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}})
		if spec != nil {
			u.Object["spec"] = spec
		}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	spec := map[string]any{"interval": "1h", "values": map[string]any{"replicaCount": int64(2)}}
	ready := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	synced := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}, map[string]any{"type": "ReverseSynced"}}}
	other := map[string]any{"interval": "1h", "values": map[string]any{"replicaCount": int64(3)}}
	owned := obj("2", spec, synced, nil)
	owned.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate}})
	tests := []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"a condition added", obj("1", spec, ready, nil), obj("2", spec, synced, nil), true},
		{"the first status", obj("1", spec, nil, nil), obj("2", spec, ready, nil), true},
		{"managedFields alone", obj("1", spec, synced, nil), owned, true},
		{"the spec changed", obj("1", spec, ready, nil), obj("2", other, ready, nil), false},
		{"the spec went", obj("1", spec, ready, nil), obj("2", nil, ready, nil), false},
		{"a label added", obj("1", spec, ready, nil), obj("2", spec, ready, map[string]string{"team": "a"}), false},
		{"no old object", nil, obj("2", spec, ready, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(StatusOnly(tt.old, tt.cur)).To(Equal(tt.want))
		})
	}
}
