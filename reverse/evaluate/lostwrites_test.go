package evaluate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// TestLostWrites: a Pending record written as the hold landed names the
// fields its writer held; once Flux's in-flight apply has put Git's values
// back, the render finds nothing, and the record is the evidence.
func TestLostWrites(t *testing.T) {
	wrote := time.Date(2026, 12, 7, 3, 32, 18, 400_000_000, time.UTC)
	cm := func(data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cm-0060"}, "data": data}}
	}
	want := cm(map[string]any{"LEVEL": "info"})
	pending := func(state refluxv1.DriftState, written ...refluxv1.WrittenField) *refluxv1.Drift {
		at := metav1.NewTime(wrote)
		d := &refluxv1.Drift{}
		d.Status.State = state
		d.Spec.LastModifier = &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", User: "alice", Time: &at}
		d.Spec.Written = written
		return d
	}
	flag := refluxv1.WrittenField{Pointer: "/data/SOAK_M4950", LiveValue: `"v4950"`}
	level := refluxv1.WrittenField{Pointer: "/data/LEVEL", LiveValue: `"debug"`}
	same := refluxv1.WrittenField{Pointer: "/data/LEVEL", LiveValue: `"info"`}
	note := refluxv1.WrittenField{Pointer: "/metadata/annotations/note", LiveValue: `"x"`}
	fluxAfter := wrote.Add(time.Second)

	tests := []struct {
		name   string
		rec    *refluxv1.Drift
		found  []drift.Field
		live   *unstructured.Unstructured
		flux   time.Time
		ignore []string
		want   map[string]refluxv1.ChangeType
	}{
		{name: "a key Flux removed", rec: pending(refluxv1.DriftPending, flag), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{"/data/SOAK_M4950": refluxv1.ChangeAdd}},
		{name: "a value Flux put back", rec: pending(refluxv1.DriftPending, level), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{"/data/LEVEL": refluxv1.ChangeUpdate}},
		{name: "in Flux's write's second", rec: pending(refluxv1.DriftPending, flag), live: cm(map[string]any{"LEVEL": "info"}),
			flux: wrote.Truncate(time.Second), want: map[string]refluxv1.ChangeType{"/data/SOAK_M4950": refluxv1.ChangeAdd}},
		{name: "Flux wrote before it: someone else took it back", rec: pending(refluxv1.DriftPending, flag),
			live: cm(map[string]any{"LEVEL": "info"}), flux: wrote.Add(-time.Minute), want: map[string]refluxv1.ChangeType{}},
		{name: "Flux never wrote", rec: pending(refluxv1.DriftPending, flag), live: cm(map[string]any{"LEVEL": "info"}),
			want: map[string]refluxv1.ChangeType{}},
		{name: "Git's value all along", rec: pending(refluxv1.DriftPending, same), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "still live, and the comparison found it", rec: pending(refluxv1.DriftPending, flag),
			found: []drift.Field{{Pointer: "/data/SOAK_M4950"}}, live: cm(map[string]any{"LEVEL": "info", "SOAK_M4950": "v4950"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "still live, and ignored", rec: pending(refluxv1.DriftPending, flag),
			live: cm(map[string]any{"LEVEL": "info", "SOAK_M4950": "v4950"}), flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "an ignore rule covers it", rec: pending(refluxv1.DriftPending, flag), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, ignore: []string{"/data"}, want: map[string]refluxv1.ChangeType{}},
		{name: "metadata is left out", rec: pending(refluxv1.DriftPending, note), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "a record the render filled in already", rec: pending(refluxv1.DriftHeld, flag), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := map[string]refluxv1.ChangeType{}
			for _, f := range lostWrites(tt.rec, tt.found, want, tt.live, tt.flux, tt.ignore) {
				got[f.Pointer] = f.ChangeType
				g.Expect(f.Modifier.User).To(Equal("alice"), "written by whom the record says")
				g.Expect(f.FluxReverts).To(BeTrue())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
