package evaluate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestLostWrites: the watch saw an edit's fields; once Flux's apply has
// put Git's values back, the comparison finds nothing, and what the watch
// saw is the evidence.
func TestLostWrites(t *testing.T) {
	wrote := time.Date(2026, 12, 7, 3, 32, 18, 400_000_000, time.UTC)
	cm := func(data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cm-0060"}, "data": data}}
	}
	want := cm(map[string]any{"LEVEL": "info"})
	by := func(fields ...refluxv1.WrittenField) write {
		at := metav1.NewTime(wrote)
		return write{by: &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", User: "alice", Time: &at}, fields: fields}
	}
	flag := refluxv1.WrittenField{Pointer: "/data/SOAK_M4950", LiveValue: `"v4950"`}
	level := refluxv1.WrittenField{Pointer: "/data/LEVEL", LiveValue: `"debug"`}
	same := refluxv1.WrittenField{Pointer: "/data/LEVEL", LiveValue: `"info"`}
	note := refluxv1.WrittenField{Pointer: "/metadata/annotations/note", LiveValue: `"x"`}
	fluxAfter := wrote.Add(time.Second)

	tests := []struct {
		name   string
		w      write
		seen   []string
		live   *unstructured.Unstructured
		flux   time.Time
		ignore []string
		want   map[string]refluxv1.ChangeType
	}{
		{name: "a key Flux removed", w: by(flag), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{"/data/SOAK_M4950": refluxv1.ChangeAdd}},
		{name: "a value Flux put back", w: by(level), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{"/data/LEVEL": refluxv1.ChangeUpdate}},
		{name: "in Flux's write's second", w: by(flag), live: cm(map[string]any{"LEVEL": "info"}),
			flux: wrote.Truncate(time.Second), want: map[string]refluxv1.ChangeType{"/data/SOAK_M4950": refluxv1.ChangeAdd}},
		{name: "Flux wrote before it: someone else took it back", w: by(flag),
			live: cm(map[string]any{"LEVEL": "info"}), flux: wrote.Add(-time.Minute), want: map[string]refluxv1.ChangeType{}},
		{name: "Flux never wrote", w: by(flag), live: cm(map[string]any{"LEVEL": "info"}),
			want: map[string]refluxv1.ChangeType{}},
		{name: "Git's value all along", w: by(same), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "still live, and the comparison found it", w: by(flag), seen: []string{"/data/SOAK_M4950"},
			live: cm(map[string]any{"LEVEL": "info", "SOAK_M4950": "v4950"}), flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "still live, and ignored", w: by(flag),
			live: cm(map[string]any{"LEVEL": "info", "SOAK_M4950": "v4950"}), flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "an ignore rule covers it", w: by(flag), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, ignore: []string{"/data"}, want: map[string]refluxv1.ChangeType{}},
		{name: "metadata is left out", w: by(note), live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
		{name: "no writer whose writes are drift", w: write{fields: []refluxv1.WrittenField{flag}}, live: cm(map[string]any{"LEVEL": "info"}),
			flux: fluxAfter, want: map[string]refluxv1.ChangeType{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			seen := map[string]bool{}
			for _, p := range tt.seen {
				seen[p] = true
			}
			got := map[string]refluxv1.ChangeType{}
			for _, f := range lostWrites(tt.w, seen, want, tt.live, tt.flux, tt.ignore) {
				got[f.Pointer] = f.ChangeType
				g.Expect(f.Modifier.User).To(Equal("alice"), "written by whom the watch saw")
				g.Expect(f.FluxReverts).To(BeTrue())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
