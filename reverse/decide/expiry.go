package decide

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/record"
)

// expiresAt is when a record's hold reaches its maximum age: its
// heldSince plus the limit the policy sets (issue 11, "break-glass
// expiry"). The age counts from the hold, not from the first sighting,
// because the hold is what keeps Git's value out of the cluster: a drift
// recorded unheld and held later gets the whole limit. A record without a
// limited hold loses its HoldExpired condition with its expiry.
func expiresAt(s refluxv1.DriftStatus, hold bool, holdFor time.Duration) (*metav1.Time, []metav1.Condition) {
	if !hold || holdFor <= 0 || s.HeldSince == nil {
		conds := append([]metav1.Condition(nil), s.Conditions...)
		apimeta.RemoveStatusCondition(&conds, refluxv1.HoldExpiredCondition)
		if len(conds) == 0 {
			conds = nil
		}
		return nil, conds
	}
	at := metav1.NewTime(s.HeldSince.Add(holdFor))
	return &at, s.Conditions
}

// ExpiryInput is what the expiry decision needs of one record.
type ExpiryInput struct {
	// Record is the record; nil when there is none.
	Record *refluxv1.Drift
	// OnExpiry is the policy's spec.manualHotfix.onExpiry; "" is Alert.
	OnExpiry refluxv1.ExpiryAction
	// LiveExists is false when the object is gone: nothing for Flux to
	// restore, so no reconcile is requested.
	LiveExists bool
	// Now is the decision's time.
	Now time.Time
}

// Expiry decides for a record whose hold may have reached its maximum age
// (status.holdExpiresAt):
//
//	hold              HoldExpired    onExpiry   decision
//	not yet expired   none           any        nothing
//	not yet expired   True           any        SetStatus: drop it (the limit moved later)
//	no limit any more True           any        SetStatus: drop it
//	expired           none           Alert      Expire: HoldExpired=True (HoldKept), page, keep holding
//	expired           True           Alert      nothing: paged once
//	expired           any            Release    Expire: state Expired, HoldExpired=True (ReleasePending),
//	                                            page, release, ask Flux to reconcile
//	closed, heldSince set (OwesRelease)          Expire: release; ask Flux to reconcile
//	                                            unless Resolved
//
// A Release is written in two steps: the record closes as Expired with
// its heldSince kept (the release is owed), the hold is released, and
// only then does Released clear heldSince. A release that fails leaves
// the record saying so, and the next decision releases again (issue 22
// §3: a failed release used to lose its request, the record closed and
// saying released). A record Resolved or Dismissed closes the same way,
// and its owed release rides the same timers. Otherwise a closed record
// (or one being dismissed) has nothing left to expire.
func Expiry(in ExpiryInput) Decision {
	rec := in.Record
	if releaseOwed(rec) {
		// A resolved record's value is Git's: Flux has nothing to restore.
		return Decision{Action: Expire, Record: rec.DeepCopy(), Hold: Release,
			RequestReconcile: in.LiveExists && rec.Status.State != refluxv1.DriftResolved,
			Why:              "the record is " + string(rec.Status.State) + " and its release is owed: releasing"}
	}
	if rec == nil || !record.IsOpen(rec) || DismissRequested(rec) {
		return Decision{Why: "no open record"}
	}
	cond := apimeta.FindStatusCondition(rec.Status.Conditions, refluxv1.HoldExpiredCondition)
	exp := rec.Status.HoldExpiresAt
	if exp == nil || rec.Status.HeldSince == nil || in.Now.Before(exp.Time) {
		if cond == nil {
			return Decision{Why: "the hold has not reached its maximum age"}
		}
		next := rec.DeepCopy()
		apimeta.RemoveStatusCondition(&next.Status.Conditions, refluxv1.HoldExpiredCondition)
		return Decision{Action: SetStatus, Record: next, Why: "the hold's maximum age moved later, or went"}
	}
	release := in.OnExpiry == refluxv1.ExpiryRelease
	if !release && cond != nil && cond.Status == metav1.ConditionTrue {
		return Decision{Why: "expired, kept held and already paged"}
	}
	next := rec.DeepCopy()
	c := metav1.Condition{Type: refluxv1.HoldExpiredCondition, Status: metav1.ConditionTrue,
		ObservedGeneration: rec.Generation, LastTransitionTime: metav1.NewTime(in.Now)}
	since := rec.Status.HeldSince.UTC().Format(time.RFC3339)
	d := Decision{Action: Expire, Record: next, Expired: true}
	if release {
		c.Reason = refluxv1.HoldReleasePendingReason
		c.Message = fmt.Sprintf("held since %s, past its maximum age at %s: releasing so that Flux restores Git (onExpiry: Release)",
			since, exp.UTC().Format(time.RFC3339))
		// heldSince stays until the release happened (Released).
		next.Status.State = refluxv1.DriftExpired
		next.Status.Closed = Closure(refluxv1.ClosedHoldExpiredReason, c.Message, rec.Spec.Revision, in.Now)
		d.Hold, d.RequestReconcile, d.Why = Release, in.LiveExists, "the hold expired: released"
		d.Unmark = Marked(rec)
	} else {
		c.Reason = refluxv1.HoldKeptReason
		c.Message = fmt.Sprintf("held since %s, past its maximum age at %s: kept held until a person decides (onExpiry: Alert)",
			since, exp.UTC().Format(time.RFC3339))
		d.Why = "the hold expired: kept, paged"
	}
	apimeta.SetStatusCondition(&next.Status.Conditions, c)
	return d
}

// OwesRelease reports whether rec closed (Resolved, Dismissed or
// Expired) while its hold is still in place. A close that releases writes
// the closed state first, so that the live path never holds the object
// again for that drift, and keeps status.heldSince until Released: a
// release that fails is asked again from the record, by the expiry
// timers or after a restart, and not lost.
func OwesRelease(rec *refluxv1.Drift) bool {
	if rec == nil || rec.Status.HeldSince == nil {
		return false
	}
	switch rec.Status.State {
	case refluxv1.DriftResolved, refluxv1.DriftDismissed, refluxv1.DriftExpired:
		return true
	}
	return false
}

// releaseOwed reports whether rec owes a release no other decision
// carries out: a dismissal requested and not yet written releases the
// hold itself (Decide).
func releaseOwed(rec *refluxv1.Drift) bool {
	return OwesRelease(rec) && !(DismissRequested(rec) && rec.Status.State != refluxv1.DriftDismissed)
}

// Released is rec once its owed release happened: heldSince cleared and,
// for an expired hold, HoldExpired saying HoldReleased. A record that
// owes no release is returned as it is.
func Released(rec *refluxv1.Drift) *refluxv1.Drift {
	next := rec.DeepCopy()
	if !OwesRelease(rec) {
		return next
	}
	next.Status.HeldSince = nil
	if rec.Status.State != refluxv1.DriftExpired {
		return next
	}
	c := metav1.Condition{Type: refluxv1.HoldExpiredCondition, Status: metav1.ConditionTrue, ObservedGeneration: rec.Generation,
		Reason: refluxv1.HoldReleasedReason}
	c.Message = fmt.Sprintf("held since %s: released so that Flux restores Git (onExpiry: Release)",
		rec.Status.HeldSince.UTC().Format(time.RFC3339))
	if exp := rec.Status.HoldExpiresAt; exp != nil {
		c.Message = fmt.Sprintf("held since %s, past its maximum age at %s: released so that Flux restores Git (onExpiry: Release)",
			rec.Status.HeldSince.UTC().Format(time.RFC3339), exp.UTC().Format(time.RFC3339))
	}
	apimeta.SetStatusCondition(&next.Status.Conditions, c)
	return next
}

// ExpiryDue says whether the expiry decision has anything to do for a
// record, and after how long: the time left to its expiry, or 0 when it
// is due now. It lets the engine arm one timer per record instead of
// looking at every record on a schedule.
func ExpiryDue(rec *refluxv1.Drift, now time.Time) (time.Duration, bool) {
	if releaseOwed(rec) {
		return 0, true
	}
	if rec == nil || !record.IsOpen(rec) || DismissRequested(rec) {
		return 0, false
	}
	cond := apimeta.FindStatusCondition(rec.Status.Conditions, refluxv1.HoldExpiredCondition)
	exp := rec.Status.HoldExpiresAt
	switch {
	case exp == nil || rec.Status.HeldSince == nil:
		return 0, cond != nil
	case cond != nil && cond.Status == metav1.ConditionTrue:
		// Paged already; only a limit moved later has anything to undo.
		return 0, now.Before(exp.Time)
	case now.Before(exp.Time):
		return exp.Sub(now), true
	}
	return 0, true
}
