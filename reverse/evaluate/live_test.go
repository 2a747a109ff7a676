package evaluate

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
)

// ownersByPointer answers FieldOwners from a table, one field at a time,
// and counts the calls; every other Detector method is left unset.
type ownersByPointer struct {
	Detector
	owners map[string]decide.Owners
	err    error
	calls  int
}

func (o *ownersByPointer) FieldOwners(_ *unstructured.Unstructured, pointers []string) (bool, bool, error) {
	o.calls++
	if o.err != nil {
		return false, false, o.err
	}
	var flux, writer bool
	for _, p := range pointers {
		flux, writer = flux || o.owners[p].Flux, writer || o.owners[p].Writer
	}
	return flux, writer, nil
}

// TestWeighAbsent pins what the evaluation hands decide for a record's
// fields that no longer drift: the owners of them all, for LostToFlux,
// and, field by field, whether Flux's apply took each (decide.Carry keeps
// those on the record). A field a person put back is not lost because
// Flux took another.
func TestWeighAbsent(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	field := func(ptr string, seen time.Time) refluxv1.DriftField {
		at := metav1.NewTime(seen)
		return refluxv1.DriftField{Pointer: ptr, FirstSeen: &at, FluxReverts: true}
	}
	live := &unstructured.Unstructured{Object: map[string]any{}}
	tests := []struct {
		name    string
		owners  map[string]decide.Owners
		err     error
		applied time.Time
		want    decide.Owners
		lost    map[string]bool
	}{
		{
			name:   "Flux took one field, a person put the other back",
			owners: map[string]decide.Owners{"/data/a": {Flux: true}, "/data/b": {Writer: true}},
			want:   decide.Owners{Flux: true, Writer: true},
			lost:   map[string]bool{"/data/a": true, "/data/b": false},
		},
		{
			name:   "Flux took both",
			owners: map[string]decide.Owners{"/data/a": {Flux: true}, "/data/b": {Flux: true}},
			want:   decide.Owners{Flux: true},
			lost:   map[string]bool{"/data/a": true, "/data/b": true},
		},
		{
			name:    "owned by nobody: Flux's write at or after the change tells",
			owners:  map[string]decide.Owners{},
			applied: t0.Add(30 * time.Second),
			lost:    map[string]bool{"/data/a": true, "/data/b": false},
		},
		{
			name:    "unreadable managedFields: by time alone",
			err:     errors.New("bad managedFields"),
			applied: t0.Add(30 * time.Second),
			lost:    map[string]bool{"/data/a": true, "/data/b": false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &ownersByPointer{owners: tt.owners, err: tt.err}
			owners, lost := weighAbsent(d, live, []string{"/data/a", "/data/b"}, tt.applied)
			g.Expect(owners).To(Equal(tt.want))
			// /data/a changed before Flux's write, /data/b after it.
			g.Expect(lost(field("/data/a", t0))).To(Equal(tt.lost["/data/a"]))
			g.Expect(lost(field("/data/b", t0.Add(time.Minute)))).To(Equal(tt.lost["/data/b"]))
			g.Expect(d.calls).To(BeNumerically("<=", 2), "managedFields are read once per field, not again per question")
		})
	}
}
