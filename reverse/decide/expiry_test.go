package decide

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// limited is an open record held at t0 whose hold expires after limit.
func limited(limit time.Duration) *refluxv1.Drift {
	d := Decide(Input{Name: name, Live: Live{Exists: true}, Evaluated: true, Observation: observed(t0, flag(`"true"`)),
		WantHold: true, HoldFor: limit, Now: t0})
	return d.Record
}

func expiredCond(d *refluxv1.Drift) *metav1.Condition {
	return apimeta.FindStatusCondition(d.Status.Conditions, refluxv1.HoldExpiredCondition)
}

func withExpired(d *refluxv1.Drift, reason string) *refluxv1.Drift {
	return with(d, func(d *refluxv1.Drift) {
		apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: refluxv1.HoldExpiredCondition,
			Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(t0)})
	})
}

// TestDecideSetsHoldExpiry: the live path writes the expiry time with the
// hold, counted from heldSince, and drops it with the hold or the limit.
func TestDecideSetsHoldExpiry(t *testing.T) {
	g := NewWithT(t)
	rec := limited(time.Hour)
	g.Expect(rec.Status.HoldExpiresAt).NotTo(BeNil())
	g.Expect(rec.Status.HoldExpiresAt.Time).To(BeTemporally("==", t0.Add(time.Hour)))

	// Seen again later: the age still counts from the hold.
	again := Decide(Input{Name: name, Record: rec, Live: held, Evaluated: true,
		Observation: observed(t0.Add(10*time.Minute), flag(`"false"`)), WantHold: true, HoldFor: time.Hour, Now: t0.Add(10 * time.Minute)})
	g.Expect(again.Record.Status.HoldExpiresAt.Time).To(BeTemporally("==", t0.Add(time.Hour)))

	// The policy's limit went: no expiry, and a HoldExpired condition goes with it.
	paged := withExpired(rec, refluxv1.HoldKeptReason)
	lifted := Decide(Input{Name: name, Record: paged, Live: held, Evaluated: true,
		Observation: observed(t0.Add(time.Second), flag(`"true"`)), WantHold: true, Now: t0.Add(time.Second)})
	g.Expect(lifted.Record.Status.HoldExpiresAt).To(BeNil())
	g.Expect(expiredCond(lifted.Record)).To(BeNil())
	g.Expect(lifted.WriteStatus).To(BeTrue())

	// No hold, no expiry.
	g.Expect(recorded(t0, false, flag(`"true"`)).Status.HoldExpiresAt).To(BeNil())
}

func TestExpiry(t *testing.T) {
	open := limited(time.Hour)
	deleted := metav1.NewTime(t0)
	after := t0.Add(time.Hour)
	tests := []struct {
		name     string
		in       ExpiryInput
		want     Action
		hold     HoldAction
		expired  bool
		reconc   bool
		state    refluxv1.DriftState
		reason   string // HoldExpired's reason on the decided record; "" for none
		due      bool   // ExpiryDue on the input record
		dueAfter time.Duration
	}{
		{name: "no record", in: ExpiryInput{Now: after}, want: Keep},
		{name: "before its age: nothing", in: ExpiryInput{Record: open, Now: t0.Add(59 * time.Minute)}, want: Keep,
			due: true, dueAfter: time.Minute},
		{name: "at its age, Alert: page and keep holding", in: ExpiryInput{Record: open, Now: after, LiveExists: true},
			want: Expire, expired: true, state: refluxv1.DriftHeld, reason: refluxv1.HoldKeptReason, due: true},
		{name: "onExpiry unset is Alert", in: ExpiryInput{Record: open, OnExpiry: "", Now: after.Add(time.Hour), LiveExists: true},
			want: Expire, expired: true, state: refluxv1.DriftHeld, reason: refluxv1.HoldKeptReason, due: true},
		{name: "Alert, already paged: nothing", in: ExpiryInput{Record: withExpired(open, refluxv1.HoldKeptReason), Now: after.Add(time.Hour)},
			want: Keep},
		{name: "at its age, Release: close as Expired, release, reconcile", in: ExpiryInput{Record: open,
			OnExpiry: refluxv1.ExpiryRelease, Now: after, LiveExists: true},
			want: Expire, hold: Release, expired: true, reconc: true, state: refluxv1.DriftExpired, reason: refluxv1.HoldReleasePendingReason, due: true},
		{name: "Release after an Alert page (policy switched): release", in: ExpiryInput{Record: withExpired(open, refluxv1.HoldKeptReason),
			OnExpiry: refluxv1.ExpiryRelease, Now: after, LiveExists: true},
			want: Expire, hold: Release, expired: true, reconc: true, state: refluxv1.DriftExpired, reason: refluxv1.HoldReleasePendingReason},
		{name: "Release, object gone: release, no reconcile", in: ExpiryInput{Record: open, OnExpiry: refluxv1.ExpiryRelease, Now: after},
			want: Expire, hold: Release, expired: true, state: refluxv1.DriftExpired, reason: refluxv1.HoldReleasePendingReason, due: true},
		{name: "paged, then the limit moved later: drop the condition", in: ExpiryInput{Record: with(withExpired(open, refluxv1.HoldKeptReason),
			func(d *refluxv1.Drift) { d.Status.HoldExpiresAt = &metav1.Time{Time: t0.Add(3 * time.Hour)} }), Now: after},
			want: SetStatus, state: refluxv1.DriftHeld, due: true},
		{name: "paged, then the limit went: drop the condition", in: ExpiryInput{Record: with(withExpired(open, refluxv1.HoldKeptReason),
			func(d *refluxv1.Drift) { d.Status.HoldExpiresAt = nil }), Now: after},
			want: SetStatus, state: refluxv1.DriftHeld, due: true},
		{name: "no limit: nothing", in: ExpiryInput{Record: recorded(t0, true, flag(`"true"`)), Now: after.Add(1000 * time.Hour)}, want: Keep},
		{name: "unheld (Proposed without a hold): nothing", in: ExpiryInput{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State, d.Status.HeldSince = refluxv1.DriftProposed, nil
		}), Now: after}, want: Keep},
		{name: "already Expired and released: closed, nothing", in: ExpiryInput{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State, d.Status.HeldSince = refluxv1.DriftExpired, nil
		}), OnExpiry: refluxv1.ExpiryRelease, Now: after}, want: Keep},
		{name: "Expired, its release owed (it failed): release again, reconcile", in: ExpiryInput{Record: owed(open),
			OnExpiry: refluxv1.ExpiryRelease, Now: after.Add(time.Minute), LiveExists: true},
			want: Expire, hold: Release, reconc: true, state: refluxv1.DriftExpired, reason: refluxv1.HoldReleasePendingReason, due: true},
		{name: "Expired, its release owed, the policy since says Alert: release all the same", in: ExpiryInput{Record: owed(open),
			Now: after.Add(time.Minute), LiveExists: true},
			want: Expire, hold: Release, reconc: true, state: refluxv1.DriftExpired, reason: refluxv1.HoldReleasePendingReason, due: true},
		// A close that releases keeps heldSince until the release
		// happened (issue 22 §3), whatever closed the record.
		{name: "Dismissed, its release owed: release again, reconcile", in: ExpiryInput{Record: closedOwing(open, refluxv1.DriftDismissed, true),
			Now: after, LiveExists: true}, want: Expire, hold: Release, reconc: true, state: refluxv1.DriftDismissed, due: true},
		{name: "Resolved, its release owed: release again; Git has the value", in: ExpiryInput{Record: closedOwing(open, refluxv1.DriftResolved, false),
			Now: after, LiveExists: true}, want: Expire, hold: Release, state: refluxv1.DriftResolved, due: true},
		{name: "Resolved, owing its release, then asked to be dismissed: left to the dismissal", in: ExpiryInput{
			Record: closedOwing(open, refluxv1.DriftResolved, true), Now: after, LiveExists: true}, want: Keep},
		{name: "dismissal asked: left to the dismissal", in: ExpiryInput{Record: with(open, func(d *refluxv1.Drift) {
			d.DeletionTimestamp = &deleted
		}), OnExpiry: refluxv1.ExpiryRelease, Now: after}, want: Keep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := tt.in.Record.DeepCopy()
			d := Expiry(tt.in)
			g.Expect(d.Action).To(Equal(tt.want), d.Why)
			g.Expect(d.Hold).To(Equal(tt.hold), d.Why)
			g.Expect(d.Expired).To(Equal(tt.expired), "expired")
			g.Expect(d.RequestReconcile).To(Equal(tt.reconc), "reconcile")
			if tt.state != "" {
				g.Expect(d.Record.Status.State).To(Equal(tt.state))
			}
			if d.Hold == Release {
				g.Expect(OwesRelease(d.Record)).To(BeTrue(), "the record says the release is owed until it happened")
			}
			if d.Record != nil {
				c := expiredCond(d.Record)
				if tt.reason == "" {
					g.Expect(c).To(BeNil())
				} else {
					g.Expect(c).NotTo(BeNil())
					g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
					g.Expect(c.Reason).To(Equal(tt.reason))
					g.Expect(c.Message).To(ContainSubstring(tt.in.Record.Status.HoldExpiresAt.UTC().Format(time.RFC3339)))
					g.Expect(d.Record.Status.HoldExpiresAt).NotTo(BeNil(), "the record still shows when it expired")
				}
				g.Expect(tt.in.Record).To(Equal(before), "the input is never mutated")
			}
			after, due := ExpiryDue(tt.in.Record, tt.in.Now)
			g.Expect(due).To(Equal(tt.due), "due")
			g.Expect(after).To(Equal(tt.dueAfter), "due after")
		})
	}
}

// owed is rec closed as Expired by Expiry, its release not done yet.
func owed(rec *refluxv1.Drift) *refluxv1.Drift {
	return Expiry(ExpiryInput{Record: rec, OnExpiry: refluxv1.ExpiryRelease, Now: rec.Status.HoldExpiresAt.Time, LiveExists: true}).Record
}

// closedOwing is rec closed as state with its hold not released yet,
// dismissed by annotation when annotated.
func closedOwing(rec *refluxv1.Drift, state refluxv1.DriftState, annotated bool) *refluxv1.Drift {
	return with(rec, func(d *refluxv1.Drift) {
		d.Status.State, d.Status.HoldExpiresAt = state, nil
		if annotated {
			d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
		}
	})
}

// TestReleasedAfterClose: a record Resolved or Dismissed owes its release
// like an Expired one, and once it happened only heldSince goes: it has
// no expiry to speak of.
func TestReleasedAfterClose(t *testing.T) {
	g := NewWithT(t)
	for _, state := range []refluxv1.DriftState{refluxv1.DriftResolved, refluxv1.DriftDismissed} {
		pending := closedOwing(limited(time.Hour), state, state == refluxv1.DriftDismissed)
		g.Expect(OwesRelease(pending)).To(BeTrue(), state)
		done := Released(pending)
		g.Expect(OwesRelease(done)).To(BeFalse(), state)
		want := pending.DeepCopy()
		want.Status.HeldSince = nil
		g.Expect(done).To(Equal(want), "%s: only heldSince goes", state)
	}
}

// TestReleased: once the release happened the record stops owing it:
// heldSince goes, HoldExpired says HoldReleased, nothing else changes.
func TestReleased(t *testing.T) {
	g := NewWithT(t)
	open := limited(time.Hour)
	pending := owed(open)
	g.Expect(OwesRelease(open)).To(BeFalse(), "an open record owes nothing")
	g.Expect(OwesRelease(pending)).To(BeTrue())
	done := Released(pending)
	g.Expect(OwesRelease(done)).To(BeFalse())
	g.Expect(done.Status.HeldSince).To(BeNil())
	g.Expect(done.Status.State).To(Equal(refluxv1.DriftExpired))
	g.Expect(done.Status.Closed).To(Equal(pending.Status.Closed))
	c := expiredCond(done)
	g.Expect(c.Reason).To(Equal(refluxv1.HoldReleasedReason))
	g.Expect(c.Message).To(ContainSubstring(open.Status.HoldExpiresAt.UTC().Format(time.RFC3339)))
	g.Expect(pending.Status.HeldSince).NotTo(BeNil(), "the input is never mutated")
	_, due := ExpiryDue(done, t0.Add(2*time.Hour))
	g.Expect(due).To(BeFalse(), "released: no timer left")
	g.Expect(Released(done)).To(Equal(done), "released twice: unchanged")
	g.Expect(Expiry(ExpiryInput{Record: done, OnExpiry: refluxv1.ExpiryRelease, Now: t0.Add(2 * time.Hour)}).Action).To(Equal(Keep))
}

// TestDecideAfterExpiry: a record closed as Expired is not held again for
// the same drift while Flux restores Git, and a new drift reopens it.
func TestDecideAfterExpiry(t *testing.T) {
	g := NewWithT(t)
	exp := Expiry(ExpiryInput{Record: limited(time.Hour), OnExpiry: refluxv1.ExpiryRelease, Now: t0.Add(time.Hour), LiveExists: true}).Record
	same := Decide(Input{Name: name, Record: exp, Live: unheld, Evaluated: true,
		Observation: observed(t0.Add(time.Hour+time.Second), flag(`"true"`)), WantHold: true, HoldFor: time.Hour, Now: t0.Add(time.Hour + time.Second)})
	g.Expect(same.Action).To(Equal(Keep), same.Why)
	g.Expect(same.Hold).To(Equal(HoldNone), "never held again for the drift that expired")

	stillHeld := Decide(Input{Name: name, Record: exp, Live: held, Evaluated: true,
		Observation: observed(t0.Add(time.Hour+time.Second), flag(`"true"`)), WantHold: true, Now: t0.Add(time.Hour + time.Second)})
	g.Expect(stillHeld.Hold).To(Equal(Release), "a release that failed is finished")

	later := t0.Add(2 * time.Hour)
	again := Decide(Input{Name: name, Record: exp, Live: unheld, Evaluated: true,
		Observation: observed(later, flag(`"other"`)), WantHold: true, HoldFor: time.Hour, Now: later})
	g.Expect(again.Action).To(Equal(Reopen), again.Why)
	g.Expect(again.Hold).To(Equal(Hold))
	g.Expect(again.Record.Status.State).To(Equal(refluxv1.DriftHeld))
	g.Expect(again.Record.Status.HoldExpiresAt.Time).To(BeTemporally("==", later.Add(time.Hour)))
	g.Expect(expiredCond(again.Record)).To(BeNil())
}
