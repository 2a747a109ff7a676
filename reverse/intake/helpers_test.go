package intake

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
)

// managers is the part of the drift detector the intake consults: which
// writers are never drift.
type managers []string

func (m managers) Allowed(manager string) bool {
	for _, a := range m {
		if a == manager {
			return true
		}
	}
	return false
}
func (m managers) Reverted(string) bool { return true }

// store is a live store whose watches have listed (or not: synced).
type store struct{ synced bool }

func (store) Get(schema.GroupVersionKind, string, string) (*unstructured.Unstructured, bool) {
	return nil, false
}
func (s store) Synced(schema.GroupVersionKind) bool { return s.synced }

// handled records what the intake's workers handed on.
type handled struct{ keys []Key }

func (h *handled) Handle(_ context.Context, k Key, _ Change, _ bool) error {
	h.keys = append(h.keys, k)
	return nil
}

// newTestIntake is an intake whose clock reads t0+1s.
func newTestIntake(t *testing.T, t0 time.Time) *Intake {
	t.Helper()
	now := t0.Add(time.Second)
	in, err := New(Options{Writers: managers{"vault-agent"}, Live: store{synced: true}, Handler: &handled{},
		Log: logr.Discard(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.live.ShutDown(); in.resync.ShutDown(); in.holds.ShutDown() })
	return in
}

func governed(mutate func(ks *kustomizev1.Kustomization, g *reverse.Governed)) *reverse.Governed {
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace, ks.Generation = "podinfo", "flux-system", 2
	ks.Status.ObservedGeneration = 2
	ks.Status.LastAppliedRevision = "main@sha1:1"
	ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}}
	g := &reverse.Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}, SourceRevision: "main@sha1:1"}
	if mutate != nil {
		mutate(ks, g)
	}
	return g
}

// govern registers a governed Kustomization named like its owner, with a
// render of revision main@sha1:1 (current) or none (nil).
func (in *Intake) govern(owner types.NamespacedName, render *desired.Render) *entry {
	g := governed(func(ks *kustomizev1.Kustomization, _ *reverse.Governed) {
		ks.Namespace, ks.Name = owner.Namespace, owner.Name
	})
	e := &entry{gov: g, render: render, parked: map[Key]Change{}, clean: map[Key]string{}, outstanding: map[Key]bool{}}
	in.entries[owner] = e
	return e
}

func secretRender(names ...string) *desired.Render {
	r := &desired.Render{Revision: "main@sha1:1", Generation: 2, Objects: map[desired.ObjectKey]*unstructured.Unstructured{}}
	for _, n := range names {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Secret")
		u.SetNamespace("payments")
		u.SetName(n)
		r.Objects[desired.KeyOf(u)] = u
	}
	return r
}
