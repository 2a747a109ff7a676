package intake

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// Flux's owner labels, on every object kustomize-controller applies; the
// live watches select on them.
const (
	FluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	FluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// Key names a live object.
type Key struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func (k Key) String() string {
	if k.Namespace == "" {
		return k.GVK.Kind + "/" + k.Name
	}
	return k.GVK.Kind + "/" + k.Namespace + "/" + k.Name
}

// KeyOf returns the key of a live object of kind gvk.
func KeyOf(gvk schema.GroupVersionKind, u *unstructured.Unstructured) Key {
	return Key{GVK: gvk, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// Change is what is known of the queued changes of one live object.
// Changes to one object coalesce: the earliest sighting and the union of
// what their writers were.
type Change struct {
	// Owner is the governing Kustomization, from the object's labels.
	Owner types.NamespacedName
	// Object is the object as last seen, for an object deleted meanwhile.
	Object refluxv1.ObjectRef
	// Seen is when the first change reached the watch; zero for a resync
	// or a record's change.
	Seen time.Time
	// From is the resourceVersion before the first change, "" if unknown.
	From string
	// Benign is true while every writer is one whose writes are never
	// drift (Flux, reflux, the control plane).
	Benign bool
	// Reverted is true when a writer is one Flux reverts, or unknown.
	Reverted bool
	// Held is true once the object was held before evaluation.
	Held bool
	// Listed is true for an object reflux holds that a watch listed as it
	// started, and no update of which came since: a replica that took
	// over finds its predecessor's holds so. Its record may have seen its
	// latest write already (evaluate.RecordSawLatestWrite).
	Listed bool
	// Deleted is the object as last seen when a watch saw it deleted: a
	// deletion is drift when the applied revision still declares it.
	Deleted *unstructured.Unstructured
	// DeletedBy is who a Pending record says deleted it, for a deletion
	// a predecessor wrote down (OnRecord): this process's audit store may
	// have started after the deletion.
	DeletedBy string
	// Audited is the latest write to a Secret the audit log reported,
	// under --secrets=metadata, where no watch sees Secrets (secrets.go).
	Audited *reverse.AuditedWrite
	// Edits are the object as the watch delivered it just after writes
	// Flux reverts, the latest MaxEdits of them, oldest first. Flux's
	// apply may undo a write before a worker takes the change, and then
	// only these say what was written (evaluate.lostEdits). They are
	// the informer's own objects, shared and never modified.
	Edits []*unstructured.Unstructured
}

// MaxEdits bounds the edits a queued change keeps: a change waits
// seconds at most, and an object edited more often than this meanwhile
// keeps its latest ones.
const MaxEdits = 4

// merge folds an earlier change of the same object into c.
func (c Change) merge(earlier Change) Change {
	if earlier.Owner == (types.NamespacedName{}) {
		return c
	}
	out := c
	if !earlier.Seen.IsZero() && (out.Seen.IsZero() || earlier.Seen.Before(out.Seen)) {
		out.Seen = earlier.Seen
	}
	if earlier.From != "" {
		out.From = earlier.From
	}
	out.Benign = c.Benign && earlier.Benign
	out.Reverted = c.Reverted || earlier.Reverted
	out.Held = c.Held || earlier.Held
	out.Listed = c.Listed && earlier.Listed
	if out.Deleted == nil {
		out.Deleted = earlier.Deleted
	}
	if out.DeletedBy == "" {
		out.DeletedBy = earlier.DeletedBy
	}
	if out.Audited == nil {
		out.Audited = earlier.Audited
	}
	if len(earlier.Edits) > 0 {
		edits := append(append(make([]*unstructured.Unstructured, 0, len(earlier.Edits)+len(c.Edits)), earlier.Edits...), c.Edits...)
		out.Edits = edits[max(0, len(edits)-MaxEdits):]
	}
	return out
}

// OwnerOf returns the Kustomization that applied a live object.
func OwnerOf(u metav1.Object) types.NamespacedName {
	l := u.GetLabels()
	return types.NamespacedName{Namespace: l[FluxNamespaceLabel], Name: l[FluxNameLabel]}
}

// ObjectRef names a live object of kind gvk as a record does.
func ObjectRef(gvk schema.GroupVersionKind, u *unstructured.Unstructured) refluxv1.ObjectRef {
	return refluxv1.ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: u.GetNamespace(),
		Name: u.GetName(), UID: string(u.GetUID())}
}
