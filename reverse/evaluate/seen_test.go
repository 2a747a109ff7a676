package evaluate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestRecordSawLatestWrite: a takeover leaves a held object to the resync
// only when its record is complete and no writer but Flux, reflux or an
// allowed one wrote after the latest write the record names.
func TestRecordSawLatestWrite(t *testing.T) {
	const name = "configmap-web-0123456789"
	at := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	stamp := func(d time.Duration) *metav1.Time { v := metav1.NewTime(at.Add(d)); return &v }
	entry := func(manager string, d time.Duration) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: stamp(d)}
	}
	complete := func() *refluxv1.Drift {
		return &refluxv1.Drift{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2},
			Spec: refluxv1.DriftSpec{Fields: []refluxv1.DriftField{{Pointer: "/data/HOTFIX", ChangeType: refluxv1.ChangeAdd,
				Modifier: &refluxv1.Modifier{Manager: "kubectl-edit", User: "alice", Time: stamp(0)}}}},
			Status: refluxv1.DriftStatus{State: refluxv1.DriftHeld, ObservedGeneration: 2},
		}
	}
	allowed := func(m string) bool { return m == "kustomize-controller" || m == "reflux" || m == "vault-agent" }
	tests := []struct {
		name    string
		rec     func(*refluxv1.Drift)
		held    string
		writers []metav1.ManagedFieldsEntry
		// unaudited: no audit log names writers.
		unaudited bool
		want      bool
	}{
		{name: "its writer's latest write is the one recorded", want: true,
			writers: []metav1.ManagedFieldsEntry{entry("kustomize-controller", -time.Hour), entry("kubectl-edit", 0), entry("reflux", time.Second)}},
		{name: "a write later in the same second cannot be told apart", want: true,
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 900*time.Millisecond)}},
		{name: "the last modifier is later than every field", want: true,
			rec: func(d *refluxv1.Drift) {
				d.Spec.LastModifier = &refluxv1.Modifier{Manager: "kubectl-patch", Time: stamp(time.Minute)}
			},
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0), entry("kubectl-patch", time.Minute)}},
		{name: "allowed writers and status writes after it are never drift", want: true,
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0), entry("vault-agent", time.Hour),
				{Manager: "kubectl-edit", Subresource: "status", Time: stamp(time.Hour)}}},
		{name: "a person wrote again a second later",
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", time.Second)}},
		{name: "another person wrote later",
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0), entry("kubectl-patch", time.Minute)}},
		{name: "held under another record", held: "configmap-web-9876543210",
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "not held", held: "-", writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "pending: the render fills it in", rec: func(d *refluxv1.Drift) { d.Status.State = refluxv1.DriftPending },
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "closed", rec: func(d *refluxv1.Drift) { d.Status.State = refluxv1.DriftResolved },
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "dismissal asked", rec: func(d *refluxv1.Drift) { d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"} },
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "its spec rewritten alone, as when the audit log named a writer late", rec: func(d *refluxv1.Drift) { d.Generation = 3 },
			want: true, writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "fields left out", rec: func(d *refluxv1.Drift) { d.Spec.OmittedFields = 1 },
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "a writer the audit log has not named yet", rec: func(d *refluxv1.Drift) { d.Spec.Fields[0].Modifier.User = "" },
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "no audit log to name the writer", rec: func(d *refluxv1.Drift) { d.Spec.Fields[0].Modifier.User = "" },
			unaudited: true, want: true, writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
		{name: "no time recorded", rec: func(d *refluxv1.Drift) { d.Spec.Fields[0].Modifier.Time = nil },
			writers: []metav1.ManagedFieldsEntry{entry("kubectl-edit", 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := complete()
			if tt.rec != nil {
				tt.rec(rec)
			}
			live := &unstructured.Unstructured{Object: map[string]any{}}
			switch tt.held {
			case "":
				live.SetAnnotations(refluxv1.HoldAnnotations(name, at, false))
			case "-":
			default:
				live.SetAnnotations(refluxv1.HoldAnnotations(tt.held, at, false))
			}
			live.SetManagedFields(tt.writers)
			seen, why := RecordSawLatestWrite(rec, live, name, allowed, !tt.unaudited)
			g.Expect(seen).To(Equal(tt.want))
			if tt.want {
				g.Expect(why).To(BeEmpty())
			} else {
				g.Expect(why).NotTo(BeEmpty(), "the debug log says why")
			}
		})
	}
	g := NewWithT(t)
	seen, _ := RecordSawLatestWrite(nil, &unstructured.Unstructured{Object: map[string]any{}}, name, allowed, true)
	g.Expect(seen).To(BeFalse(), "no record")
}
