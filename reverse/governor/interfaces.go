package governor

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/evaluate"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/writeback/scheduler"
)

// The engine's cluster side is given to it through these interfaces,
// implemented in controllers/ and wired by the manager.

// Detector finds the drift of a live object as Flux sees it
// (reverse/drift.Detector).
type Detector interface {
	evaluate.Detector
	// Reverted reports whether Flux undoes everything manager writes.
	Reverted(manager string) bool
}

var _ Detector = &drift.Detector{}

// Holder holds live objects against Flux's revert and releases them.
type Holder = execute.Holder

// LiveStore is the live watches' cache.
type LiveStore interface {
	// Get returns the cached live object.
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
	// Synced reports whether the watch of gvk has listed every object.
	Synced(gvk schema.GroupVersionKind) bool
	// Complete reports whether objects of gvk in namespace are watched
	// and listed: only then does one missing from the store not exist.
	Complete(gvk schema.GroupVersionKind, namespace string) bool
	// Forget stops the watches a Kustomization alone used.
	Forget(ks types.NamespacedName)
}

// Renders keeps renders per Kustomization (reverse/desired.Renderer).
type Renders interface {
	Forget(ks types.NamespacedName)
}

// Writer writes drift sets to Git and checks their branches
// (reverse/writeback/branches.Writer).
type Writer = scheduler.Writer

// Targets fills in where a Kustomization's drift is written.
type Targets = scheduler.Targets

// Attributor names the user behind a write to a live object, from the
// audit log.
type Attributor interface {
	User(obj *unstructured.Unstructured, manager string, at time.Time) observe.Who
	Deleter(obj *unstructured.Unstructured, at time.Time) (reverse.Deleter, bool)
	Writer(obj *unstructured.Unstructured, at time.Time, benign func(manager string) bool) (reverse.AuditedWrite, bool)
}

var _ evaluate.Attributor = Attributor(nil)

// Marker adds the manual-hotfix annotation to a live object whose hotfix
// the audit log declared, under reflux's field manager.
type Marker = execute.Marker

// EventRecorder is what reflux needs of Flux's events recorder.
type EventRecorder = execute.EventRecorder

// Impersonation gives the engine the Detector and Holder that act as an
// identity: a Kustomization's ServiceAccount, which kustomize-controller
// impersonates for every apply (reverse/tenancy). Getting them never makes
// a request, so the live path never waits on it.
type Impersonation interface {
	Detector(user string) (Detector, error)
	Holder(user string) (Holder, error)
}

// detectors adapts Impersonation to what the evaluation stage needs.
type detectors struct{ Impersonation }

func (d detectors) Detector(user string) (evaluate.Detector, error) {
	return d.Impersonation.Detector(user)
}
