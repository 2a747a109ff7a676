package decide

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/record"
)

// PendingInput is what is known of a live change that no render can
// evaluate yet: the render of the revision Flux applies is not ready, and
// no older one describes the object as it is declared now.
type PendingInput struct {
	// Name is the object's record name.
	Name string
	// Record is the existing record; nil when there is none.
	Record *refluxv1.Drift
	// Live describes the live object.
	Live          Live
	Kustomization refluxv1.KustomizationRef
	Policy        string
	Object        refluxv1.ObjectRef
	// Writer is the writer to blame for the change (drift.Detector.Written);
	// nil when no writer's writes can be drift, and then there is nothing
	// to record yet.
	Writer *refluxv1.Modifier
	// Written are the fields Writer holds, with their live values.
	Written []refluxv1.WrittenField
	// Hold is true when the object is to be held until the change is
	// evaluated: Flux would revert it, and the policy lets reflux hold.
	Hold bool
	Now  time.Time
}

// Pending decides for a live change that waits for its render. The change
// is written down at once, as a Pending record, so that nobody waits for
// a render to see it and a crash loses nothing: the record and the hold
// are both in the cluster. The render fills the record in (Decide); a
// Pending record it finds nothing in closes as NoDrift.
//
//	record             decision
//	none               Create, Pending
//	open, Pending      Update when the writer or its fields changed
//	open, evaluated    keep: it says what diverged, the render says the rest
//	closed             Reopen as Pending when written since it closed
func Pending(in PendingInput) Decision {
	rec := in.Record
	if rec != nil && DismissRequested(rec) {
		return Decide(Input{Name: in.Name, Record: rec, Live: in.Live, Now: in.Now})
	}
	hold := Decision{Why: "kept until the render is current"}
	if in.Hold && !in.Live.Held {
		hold = Decision{Hold: Hold, HeldSince: in.Now, Why: "held until the render is current: Flux would revert the change"}
	}
	if in.Writer == nil {
		return hold
	}
	action := Update
	switch {
	case rec == nil:
		action = Create
	case !rec.DeletionTimestamp.IsZero():
		return hold
	case !record.IsOpen(rec):
		if sawWrite(rec, in.Writer, writtenValues(in.Written)) {
			// What closed it saw this write already: dismissed, expired
			// or resolved, it is Flux's to revert, so no hold either.
			return Decision{Why: "closed, and not written since"}
		}
		rec, action = reopened(rec, in.Now), Reopen
	case rec.Status.State != refluxv1.DriftPending:
		return hold
	}
	next := pendingRecord(rec, in)
	heldByUs := in.Live.Held && in.Live.HeldBy == in.Name
	if in.Hold || heldByUs {
		since := metav1.NewTime(in.Now)
		if rec != nil && rec.Status.HeldSince != nil {
			since = *rec.Status.HeldSince
		}
		next.Status.HeldSince = &since
	}
	d := hold
	d.Action, d.Record = action, next
	d.WriteSpec = rec == nil || action == Reopen ||
		!equality.Semantic.DeepEqual(rec.Spec, next.Spec) || !equality.Semantic.DeepEqual(rec.Labels, next.Labels)
	d.WriteStatus = rec == nil || action == Reopen || !equality.Semantic.DeepEqual(rec.Status, next.Status)
	if !d.WriteSpec && !d.WriteStatus && d.Hold == HoldNone {
		d.Action = Keep
	}
	d.Why = "pending: " + d.Why
	return d
}

// PendingDeletion reports whether rec is the Pending record of a
// deletion: one written before its render, which names the deleter and
// no field yet.
func PendingDeletion(rec *refluxv1.Drift) bool {
	return rec != nil && record.IsOpen(rec) && rec.Status.State == refluxv1.DriftPending && len(rec.Spec.Fields) == 0 &&
		rec.Spec.LastModifier != nil && rec.Spec.LastModifier.Operation == refluxv1.DeleteOperation
}

// pendingRecord is rec, or a new record, saying what in knows.
func pendingRecord(rec *refluxv1.Drift, in PendingInput) *refluxv1.Drift {
	next := record.Merge(rec, record.Observation{Kustomization: in.Kustomization, Policy: in.Policy, Object: in.Object,
		Now: in.Now})
	if rec != nil && next.Spec.LastSeen.Sub(rec.Spec.LastSeen.Time) < LastSeenResolution {
		next.Spec.LastSeen = rec.Spec.LastSeen
	}
	next.Spec.Written = in.Written
	next.Spec.LastModifier = in.Writer.DeepCopy()
	next.Status.State = refluxv1.DriftPending
	next.Status.Action, next.Status.Severity, next.Status.Fingerprint = "", "", ""
	return next
}

// writtenAfter reports whether w wrote after t; an unknown writer or time
// counts as after. managedFields times have one-second resolution, so a
// write in the second a record closed counts as after it: a new change is
// never taken for the one already decided.
func writtenAfter(w *refluxv1.Modifier, t time.Time) bool {
	return w == nil || w.Time == nil || !w.Time.Time.Before(t.Truncate(time.Second))
}

// sawWrite reports whether the closed record rec already saw the write
// w, which left values (pointer to live value) on the object. A write
// before the second rec closed in was seen. One in that very second is
// told apart by its content: managedFields keep the second only, and a
// change dismissed within the second it was made must not come back as
// new (reopened and held again, for good). It is the write rec holds
// when the same manager wrote it in the same second and left exactly the
// values rec says; masked Secret values cannot tell, so there it counts
// as new.
func sawWrite(rec *refluxv1.Drift, w *refluxv1.Modifier, values map[string]string) bool {
	closed := rec.Status.Closed
	if closed == nil {
		return false
	}
	if !writtenAfter(w, closed.Time.Time) {
		return true
	}
	last := rec.Spec.LastModifier
	if w == nil || w.Time == nil || last == nil || last.Time == nil || rec.Spec.Object.Kind == "Secret" ||
		last.Manager != w.Manager || last.Operation != w.Operation || !last.Time.Equal(w.Time) || len(values) == 0 {
		return false
	}
	held := writtenValues(rec.Spec.Written)
	for _, f := range rec.Spec.Fields {
		held[f.Pointer] = f.LiveValue
	}
	for p, v := range values {
		if hv, ok := held[p]; !ok || hv != v {
			return false
		}
	}
	return true
}

// writtenValues indexes written fields' live values by pointer.
func writtenValues(fields []refluxv1.WrittenField) map[string]string {
	out := make(map[string]string, len(fields))
	for _, f := range fields {
		out[f.Pointer] = f.LiveValue
	}
	return out
}
