package intake

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestOnLiveUpdateTellsWritesFromStatus: an update whose managedFields
// name no writer is a removal someone made, which Flux reverts; a status
// write in the same second as its writer's last one looks the same in
// managedFields and is no change at all. It failed e2e/helmlive once:
// reflux's own condition on a HelmRelease was taken for a live edit and
// held, and Flux's next apply of the HelmRelease skipped.
func TestOnLiveUpdateTellsWritesFromStatus(t *testing.T) {
	owner := types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}
	gvk := schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}
	at := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"interval": "1h", "suspend": false}}}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("apps")
		u.SetName("web")
		u.SetResourceVersion("1")
		u.SetLabels(map[string]string{"kustomize.toolkit.fluxcd.io/name": owner.Name, "kustomize.toolkit.fluxcd.io/namespace": owner.Namespace})
		u.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply, Time: &at, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}},
			{Manager: "reflux", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &at,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}})
		return u
	}
	tests := []struct {
		name           string
		change         func(u *unstructured.Unstructured)
		benign, revert bool
	}{
		{"a condition written in the same second", func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "ReverseSynced"}}}
		}, true, false},
		{"a field removed", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "suspend")
		}, false, true},
		{"a status write by a manager Flux reverts", func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"observedGeneration": int64(2)}
			later := metav1.NewTime(at.Add(time.Second))
			u.SetManagedFields(append(u.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "some-operator",
				Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &later,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:observedGeneration":{}}}`)}}))
		}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := newTestIntake(t, time.Now())
			in.govern(owner, nil)
			old := base()
			cur := base()
			tt.change(cur)
			cur.SetResourceVersion("2")
			in.OnLiveUpdate(gvk, old, cur, time.Now())
			c, queued := in.pending[KeyOf(gvk, cur)]
			g.Expect(queued).To(BeTrue())
			g.Expect([]bool{c.Benign, c.Reverted}).To(Equal([]bool{tt.benign, tt.revert}))
		})
	}
}

// TestOnLiveAddTakesWhatRefluxHolds: a listed object a person edited is
// taken as a live change when Flux would revert it, and also when reflux
// holds it: a replica that held it ahead of its evaluation may have lost
// its lease before it wrote the record, and nothing else would look at it
// before the resync, paced over every object, got to it. One a person
// excluded from Flux, or only a writer the engine allows wrote, is not.
func TestOnLiveAddTakesWhatRefluxHolds(t *testing.T) {
	owner := types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	at := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	flux := metav1.ManagedFieldsEntry{Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply, Time: &at,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:mode":{}}}`)}}
	edit := metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:LEVEL":{}}}`)}}
	agent := metav1.ManagedFieldsEntry{Manager: "vault-agent", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:LEVEL":{}}}`)}}
	excluded := map[string]string{refluxv1.ReconcileAnnotation: refluxv1.ReconcileDisabled}
	tests := []struct {
		name        string
		annotations map[string]string
		writers     []metav1.ManagedFieldsEntry
		taken       bool
		// listed: its record may have seen it all (Change.Listed).
		listed bool
	}{
		{name: "a person's edit", writers: []metav1.ManagedFieldsEntry{flux, edit}, taken: true},
		{name: "a person's edit reflux holds", annotations: refluxv1.HoldAnnotations("configmap-web-0123456789", at.Time, false),
			writers: []metav1.ManagedFieldsEntry{flux, edit}, taken: true, listed: true},
		{name: "a person's edit they excluded from Flux", annotations: excluded, writers: []metav1.ManagedFieldsEntry{flux, edit}},
		{name: "an allowed writer's own", writers: []metav1.ManagedFieldsEntry{agent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := newTestIntake(t, time.Now())
			in.govern(owner, nil)
			u := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"mode": "git", "LEVEL": "debug"}}}
			u.SetGroupVersionKind(gvk)
			u.SetNamespace("apps")
			u.SetName("web")
			u.SetLabels(map[string]string{"kustomize.toolkit.fluxcd.io/name": owner.Name, "kustomize.toolkit.fluxcd.io/namespace": owner.Namespace})
			u.SetAnnotations(tt.annotations)
			u.SetManagedFields(tt.writers)
			in.OnLiveAdd(gvk, u, time.Now())
			c, queued := in.pending[KeyOf(gvk, u)]
			g.Expect(queued).To(Equal(tt.taken))
			g.Expect(c.Listed).To(Equal(tt.listed))
			if queued {
				// An update the watch delivers after the listing is a
				// write no record can have seen.
				in.OnLiveUpdate(gvk, u, u.DeepCopy(), time.Now())
				g.Expect(in.pending[KeyOf(gvk, u)].Listed).To(BeFalse(), "an update since the listing")
			}
		})
	}
}

// TestAnUpdateToAnotherUIDIsADeletion: an informer that lists again
// after a gap in its watch reports an object deleted and created again
// meanwhile as an update, from the old object to the new one. The
// deletion is queued as the watch would have queued it, with the old
// object; the recreated object is Flux's and needs nothing more.
func TestAnUpdateToAnotherUIDIsADeletion(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	in := newTestIntake(t, time.Now())
	in.govern(owner, nil)
	object := func(uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"mode": "git"}}}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("apps")
		u.SetName("web")
		u.SetUID(types.UID(uid))
		u.SetLabels(map[string]string{"kustomize.toolkit.fluxcd.io/name": owner.Name, "kustomize.toolkit.fluxcd.io/namespace": owner.Namespace})
		return u
	}
	old, cur := object("first"), object("second")
	in.OnLiveUpdate(gvk, old, cur, time.Now())
	c, queued := in.pending[KeyOf(gvk, cur)]
	g.Expect(queued).To(BeTrue())
	g.Expect(c.Deleted).NotTo(BeNil(), "decided as a deletion")
	g.Expect(string(c.Deleted.GetUID())).To(Equal("first"), "of the object that went")

	same := object("second")
	in = newTestIntake(t, time.Now())
	in.govern(owner, nil)
	in.OnLiveUpdate(gvk, cur, same, time.Now())
	c = in.pending[KeyOf(gvk, same)]
	g.Expect(c.Deleted).To(BeNil(), "the same object, updated")
}

// TestDeletionOf: a deletion written down as Pending stands for the
// deletion of the object the record names, from when and by whom it was
// made.
func TestDeletionOf(t *testing.T) {
	g := NewWithT(t)
	at := metav1.NewTime(time.Date(2026, 12, 7, 3, 3, 38, 0, time.UTC))
	d := &refluxv1.Drift{}
	d.Spec.Kustomization = refluxv1.KustomizationRef{Namespace: "flux-system", Name: "podinfo"}
	d.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "web", UID: "gone"}
	d.Spec.FirstSeen = metav1.NewTime(at.Add(time.Second))
	d.Spec.LastModifier = &refluxv1.Modifier{Operation: refluxv1.DeleteOperation, User: "alice", Time: &at}
	d.Status.State = refluxv1.DriftPending

	k, c := DeletionOf(d)
	g.Expect(k).To(Equal(Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "web"}))
	g.Expect(c.Owner).To(Equal(types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}))
	g.Expect(c.Deleted).NotTo(BeNil(), "decided as a deletion")
	g.Expect(string(c.Deleted.GetUID())).To(Equal("gone"), "of the object that went")
	g.Expect(c.Deleted.GetKind()).To(Equal("ConfigMap"))
	g.Expect(c.Seen).To(Equal(at.Time), "seen when it was made")
	g.Expect(c.DeletedBy).To(Equal("alice"), "by whom the record says")

	d.Spec.LastModifier.Time = nil
	_, c = DeletionOf(d)
	g.Expect(c.Seen).To(Equal(d.Spec.FirstSeen.Time), "or when it was first seen")
}
