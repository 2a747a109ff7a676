package governor

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// Detector finds the drift of a live object as Flux sees it
// (reverse/drift.Detector).
type Detector interface {
	Detect(ctx context.Context, in drift.Input) (drift.Result, error)
	Unchanged(in drift.Input) bool
	Allowed(manager string) bool
	Reverted(manager string) bool
}

var _ Detector = &drift.Detector{}

// Holder holds live objects against Flux's revert and releases them.
type Holder interface {
	Hold(ctx context.Context, obj refluxv1.ObjectRef, record string, since time.Time) error
	Release(ctx context.Context, obj refluxv1.ObjectRef) error
}

// LiveStore is the live watches' cache.
type LiveStore interface {
	// Get returns the cached live object.
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
	// Synced reports whether the watch of gvk has listed every object.
	Synced(gvk schema.GroupVersionKind) bool
	// Forget stops the watches a Kustomization alone used.
	Forget(ks types.NamespacedName)
}

// Renders keeps renders per Kustomization (reverse/desired.Renderer).
type Renders interface {
	Forget(ks types.NamespacedName)
}

// Writer writes drift sets to Git and checks their branches
// (reverse/branches.Writer).
type Writer interface {
	Write(ctx context.Context, set reverse.DriftSet) ([]reverse.BranchResult, error)
	Check(ctx context.Context, set reverse.DriftSet) (reverse.BranchCheck, error)
}

// Targets fills in where a Kustomization's drift is written: the
// GitRepository, its credentials, the signing key and the live Secrets the
// records name. Reading them is the cluster side's job.
type Targets interface {
	Resolve(ctx context.Context, g *Governed, set *reverse.DriftSet) error
}

// Attributor names the user behind a field manager's write to a live
// object, from the audit log.
type Attributor interface {
	// User returns the user and its groups, or the zero Who when not
	// known (yet).
	User(obj *unstructured.Unstructured, manager string, at time.Time) observe.Who
	// Deleter returns who deleted obj at about at, and false while the
	// audit log has not delivered the deletion (yet).
	Deleter(obj *unstructured.Unstructured, at time.Time) (Deleter, bool)
	// Writer returns the latest update of obj at or before at whose
	// writer is neither Flux nor one benign says never drifts: who made
	// a change no managedFields entry records, such as a removed field.
	// False while the audit log has not delivered one (yet).
	Writer(obj *unstructured.Unstructured, at time.Time, benign func(manager string) bool) (AuditedWrite, bool)
}

// Marker adds the manual-hotfix annotation to a live object whose hotfix
// the audit log declared, under reflux's field manager.
type Marker interface {
	Mark(ctx context.Context, obj refluxv1.ObjectRef, annotations map[string]string) error
	// Unmark removes the annotations again, when the record closes.
	Unmark(ctx context.Context, obj refluxv1.ObjectRef, keys []string) error
}

// EventRecorder is what reflux needs of Flux's events recorder
// (github.com/fluxcd/pkg/runtime/events), which writes Kubernetes events
// and forwards them to notification-controller when --events-addr is set.
type EventRecorder interface {
	AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{})
}
