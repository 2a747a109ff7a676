package evaluate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
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

// staleDetector answers every dry run as the apiserver does when the live
// object changed after the copy the evaluation holds.
type staleDetector struct{ Detector }

func (staleDetector) Unchanged(drift.Input) bool { return false }
func (staleDetector) Detect(context.Context, drift.Input) (drift.Result, error) {
	return drift.Result{}, fmt.Errorf("%w: ConfigMap apps/settings at resourceVersion 7", drift.ErrStale)
}

type noLive struct{}

func (noLive) Get(schema.GroupVersionKind, string, string) (*unstructured.Unstructured, bool) {
	return nil, false
}

// TestAStaleDryRunIsAnErrorToLookAgain: evaluating a copy the apiserver
// has moved past decides nothing and says so as drift.ErrStale, so the
// caller looks at the object again. It used to decide "stale" and wait for
// the newer version's event, which never comes when that version is
// reflux's own hold (the watch drops it): the change was lost.
func TestAStaleDryRunIsAnErrorToLookAgain(t *testing.T) {
	g := NewWithT(t)
	e, err := New(Options{Detector: staleDetector{}, Live: noLive{}})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace("apps")
	cm.SetName("settings")
	cm.SetResourceVersion("7")
	ks := &kustomizev1.Kustomization{}
	ks.Namespace, ks.Name = "flux-system", "apps"
	render := &desired.Render{Revision: "main@sha1:1", Objects: map[desired.ObjectKey]*unstructured.Unstructured{desired.KeyOf(cm): cm.DeepCopy()}}
	snap := reverse.Snapshot{Gov: &reverse.Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}}, Render: render, Current: true}

	res, err := e.Live(context.Background(), Input{Snapshot: snap, Live: cm, Name: "configmap-settings-0123456789"})
	g.Expect(err).To(MatchError(drift.ErrStale))
	g.Expect(res.Decision.Action).To(BeEmpty(), "nothing decided")
}
