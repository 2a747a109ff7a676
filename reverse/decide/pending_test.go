package decide

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// kubectlEdit is a writer whose change no render has evaluated yet.
func kubectlEdit(at time.Time) *refluxv1.Modifier {
	tm := metav1.NewTime(at.Truncate(time.Second))
	return &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", Time: &tm}
}

func pendingIn(at time.Time, rec *refluxv1.Drift, live Live, hold bool, written ...string) PendingInput {
	in := PendingInput{Name: name, Record: rec, Live: live, Kustomization: ks, Policy: "apps", Object: obj,
		Writer: kubectlEdit(at), Hold: hold, Now: at}
	for _, v := range written {
		in.Written = append(in.Written, refluxv1.WrittenField{Pointer: "/data/FEATURE_DARK_MODE", LiveValue: v})
	}
	return in
}

func TestPending(t *testing.T) {
	pending := Pending(pendingIn(t0, nil, unheld, true, `"true"`)).Record
	evaluated := recorded(t0, true, flag(`"true"`))
	dismissedAt := t0.Add(time.Minute)
	dismissed := with(evaluated, func(d *refluxv1.Drift) {
		d.Status.State, d.Status.HeldSince = refluxv1.DriftDismissed, nil
		d.Status.Closed = Closure(refluxv1.ClosedDismissedReason, "dismissed", "", dismissedAt)
	})
	tests := []struct {
		name  string
		in    PendingInput
		want  Action
		hold  HoldAction
		state refluxv1.DriftState
		// written is the live value the record's written field says.
		written string
	}{
		{name: "no record: create it Pending, and hold", in: pendingIn(t0, nil, unheld, true, `"true"`),
			want: Create, hold: Hold, state: refluxv1.DriftPending, written: `"true"`},
		{name: "no record, Flux would not revert: create it Pending, no hold", in: pendingIn(t0, nil, unheld, false, `"true"`),
			want: Create, state: refluxv1.DriftPending, written: `"true"`},
		{name: "no writer whose writes can be drift: only the hold", in: func() PendingInput {
			in := pendingIn(t0, nil, unheld, true)
			in.Writer = nil
			return in
		}(), want: Keep, hold: Hold},
		{name: "pending, the same change seen again: nothing", in: func() PendingInput {
			in := pendingIn(t0, pending, held, false, `"true"`)
			in.Now = t0.Add(10 * time.Second)
			return in
		}(), want: Keep},
		{name: "pending, another value written: update", in: pendingIn(t0.Add(10*time.Second), pending, held, false, `"false"`),
			want: Update, state: refluxv1.DriftPending, written: `"false"`},
		{name: "evaluated and open: the render says the rest", in: pendingIn(t0.Add(10*time.Second), evaluated, held, false, `"false"`),
			want: Keep},
		{name: "closed, and not written since: nothing to record or hold", in: pendingIn(t0, dismissed, unheld, true, `"true"`),
			want: Keep},
		{name: "closed, written since: reopen Pending", in: pendingIn(dismissedAt.Add(time.Hour), dismissed, unheld, true, `"later"`),
			want: Reopen, hold: Hold, state: refluxv1.DriftPending, written: `"later"`},
		{name: "dismissed while pending in the second of the change, the same write seen again: nothing", in: pendingIn(t0,
			dismissedInItsSecond(pending), unheld, true, `"true"`), want: Keep},
		{name: "dismissed while pending in the second of the change, another value written in it: reopen", in: pendingIn(t0,
			dismissedInItsSecond(pending), unheld, true, `"false"`), want: Reopen, hold: Hold, state: refluxv1.DriftPending, written: `"false"`},
		{name: "dismissed in the second of the change, another writer in it: reopen", in: func() PendingInput {
			in := pendingIn(t0, dismissedInItsSecond(pending), unheld, true, `"true"`)
			in.Writer.Manager = "kubectl-patch"
			return in
		}(), want: Reopen, hold: Hold, state: refluxv1.DriftPending, written: `"true"`},
		{name: "dismissal asked: carried out at once", in: pendingIn(t0, with(pending, func(d *refluxv1.Drift) {
			d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
		}), held, false, `"true"`), want: Dismiss, hold: Release},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Pending(tt.in)
			g.Expect(d.Action).To(Equal(tt.want), d.Why)
			g.Expect(d.Hold).To(Equal(tt.hold), d.Why)
			g.Expect(d.Changed).To(BeFalse(), "a Pending record is no detection yet")
			if tt.state == "" {
				return
			}
			rec := d.Record
			g.Expect(rec.Name).To(Equal(name))
			g.Expect(rec.Status.State).To(Equal(tt.state))
			g.Expect(rec.Spec.Fields).To(BeEmpty(), "no render said what diverges")
			g.Expect(rec.Spec.Revision).To(BeEmpty())
			g.Expect(rec.Spec.Written).To(Equal([]refluxv1.WrittenField{{Pointer: "/data/FEATURE_DARK_MODE", LiveValue: tt.written}}))
			g.Expect(rec.Spec.LastModifier).To(Equal(tt.in.Writer))
			g.Expect(rec.Status.Fingerprint).To(BeEmpty())
			g.Expect(rec.Status.HeldSince != nil).To(Equal(tt.hold == Hold || tt.in.Live.Held))
			g.Expect(d.WriteSpec && d.WriteStatus).To(Equal(d.Action != Update), "an update writes only what changed")
		})
	}
}

// TestPendingIsFilledIn: the render's evaluation of a Pending record
// takes it over: drift makes it an ordinary record; none closes it.
func TestPendingIsFilledIn(t *testing.T) {
	pending := Pending(pendingIn(t0, nil, unheld, true, `"true"`)).Record
	pending.Status.HeldSince = &metav1.Time{Time: t0}
	tests := []struct {
		name   string
		in     Input
		want   Action
		hold   HoldAction
		state  refluxv1.DriftState
		closed string
	}{
		{name: "drift: the record says it, held", in: Input{Record: pending, Live: held, Evaluated: true,
			Observation: observed(t0.Add(time.Minute), flag(`"true"`)), WantHold: true}, want: Update, state: refluxv1.DriftHeld},
		{name: "drift no rule holds: the record says it, the early hold goes", in: Input{Record: pending, Live: held, Evaluated: true,
			Observation: observed(t0.Add(time.Minute), flag(`"true"`))}, want: Update, hold: Release, state: refluxv1.DriftDetected},
		{name: "no drift: closed as NoDrift, released", in: Input{Record: pending, Live: held, Evaluated: true, Declared: true,
			Now: t0.Add(time.Minute)}, want: Resolve, hold: Release, closed: refluxv1.ClosedNoDriftReason},
		{name: "no drift, never held: closed as NoDrift", in: Input{Record: with(pending, func(d *refluxv1.Drift) { d.Status.HeldSince = nil }),
			Live: unheld, Evaluated: true, Now: t0.Add(time.Minute)}, want: Resolve, closed: refluxv1.ClosedNoDriftReason},
		{name: "the object is gone: closed as NoDrift", in: Input{Record: pending, Live: Live{}, Now: t0.Add(time.Minute)},
			want: Resolve, closed: refluxv1.ClosedNoDriftReason},
		{name: "dismissed while pending, the same change evaluated later: stays closed", in: Input{
			Record: with(pending, func(d *refluxv1.Drift) {
				d.Status.State, d.Status.HeldSince = refluxv1.DriftDismissed, nil
				d.Status.Closed = Closure(refluxv1.ClosedDismissedReason, "dismissed", "", t0.Add(30*time.Second))
			}), Live: unheld, Evaluated: true, Observation: observed(t0.Add(time.Minute), withModifier(flag(`"true"`), t0)), WantHold: true},
			want: Keep},
		{name: "dismissed while pending in the second of the change, the same change evaluated: stays closed", in: Input{
			Record: dismissedInItsSecond(pending), Live: unheld, Evaluated: true,
			Observation: observed(t0.Add(time.Minute), withModifier(flag(`"true"`), t0)), WantHold: true},
			want: Keep},
		{name: "dismissed while pending in the second of the change, another value in it: reopened", in: Input{
			Record: dismissedInItsSecond(pending), Live: unheld, Evaluated: true,
			Observation: observed(t0.Add(time.Minute), withModifier(flag(`"false"`), t0)), WantHold: true},
			want: Reopen, hold: Hold, state: refluxv1.DriftHeld},
		{name: "a Secret dismissed while pending in the second of the change: masked values cannot tell, reopened", in: Input{
			Record: with(dismissedInItsSecond(pending), func(d *refluxv1.Drift) { d.Spec.Object.Kind = "Secret" }),
			Live:   unheld, Evaluated: true, Observation: observed(t0.Add(time.Minute), withModifier(flag(`"true"`), t0)), WantHold: true},
			want: Reopen, hold: Hold, state: refluxv1.DriftHeld},
		{name: "dismissed while pending, written again since: reopened", in: Input{
			Record: with(pending, func(d *refluxv1.Drift) {
				d.Status.State, d.Status.HeldSince = refluxv1.DriftDismissed, nil
				d.Status.Closed = Closure(refluxv1.ClosedDismissedReason, "dismissed", "", t0.Add(30*time.Second))
			}), Live: unheld, Evaluated: true, Observation: observed(t0.Add(time.Hour), withModifier(flag(`"later"`), t0.Add(time.Hour))),
			WantHold: true}, want: Reopen, hold: Hold, state: refluxv1.DriftHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := tt.in
			in.Name = name
			if in.Now.IsZero() {
				in.Now = in.Observation.Now
			}
			d := Decide(in)
			g.Expect(d.Action).To(Equal(tt.want), d.Why)
			g.Expect(d.Hold).To(Equal(tt.hold), d.Why)
			if tt.state != "" {
				g.Expect(d.Record.Status.State).To(Equal(tt.state))
				g.Expect(d.Record.Spec.Written).To(BeEmpty(), "the fields take over")
				g.Expect(d.Record.Spec.Fields).NotTo(BeEmpty())
				g.Expect(d.Changed).To(BeTrue(), "filling a Pending record in is the detection")
			}
			if tt.closed == "" {
				g.Expect(d.Closed).To(BeNil())
				return
			}
			g.Expect(d.Closed).NotTo(BeNil())
			g.Expect(d.Closed.Reason).To(Equal(tt.closed))
		})
	}
}

// dismissedInItsSecond is the Pending record rec dismissed 300 ms after
// its change: in the same second of managedFields' time.
func dismissedInItsSecond(rec *refluxv1.Drift) *refluxv1.Drift {
	return with(rec, func(d *refluxv1.Drift) {
		d.Status.State, d.Status.HeldSince = refluxv1.DriftDismissed, nil
		d.Status.Closed = Closure(refluxv1.ClosedDismissedReason, "dismissed", "", t0.Add(300*time.Millisecond))
	})
}

func withModifier(f refluxv1.DriftField, at time.Time) refluxv1.DriftField {
	f.Modifier = kubectlEdit(at)
	return f
}

// TestPendingDeletion: a deletion written before its render is told
// apart from a pending edit, and from the record the render filled in.
func TestPendingDeletion(t *testing.T) {
	at := metav1.NewTime(t0)
	deletion := pendingIn(t0, nil, Live{}, false)
	deletion.Writer = &refluxv1.Modifier{Operation: refluxv1.DeleteOperation, User: "alice", Time: &at}
	pendingDeletion := Pending(deletion).Record
	filled := pendingDeletion.DeepCopy()
	filled.Spec.Fields = []refluxv1.DriftField{{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeRemove}}
	closed := pendingDeletion.DeepCopy()
	closed.Status.State, closed.Status.Closed = refluxv1.DriftResolved, &refluxv1.DriftClosure{Time: at}
	tests := []struct {
		name string
		rec  *refluxv1.Drift
		want bool
	}{
		{"no record", nil, false},
		{"a pending deletion", pendingDeletion, true},
		{"a pending edit", Pending(pendingIn(t0, nil, unheld, true, `"true"`)).Record, false},
		{"filled in by its render", filled, false},
		{"closed", closed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(PendingDeletion(tt.rec)).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(pendingDeletion.Status.State).To(Equal(refluxv1.DriftPending))
	g.Expect(pendingDeletion.Spec.LastModifier.User).To(Equal("alice"))
	g.Expect(pendingDeletion.Status.HeldSince).To(BeNil(), "nothing to hold")
}

// TestAPendingDeletionOfAGoneObjectStaysOpen: a look at an object that is
// gone, with nothing said of its deletion (a change queued without the
// deleted object), closes a pending edit, whose change is moot, but not a
// pending deletion, which is that very fact: only its render tells a
// prune (the governor's deletion path), and closing it here lost the
// deletion for good once Flux recreated the object.
func TestAPendingDeletionOfAGoneObjectStaysOpen(t *testing.T) {
	g := NewWithT(t)
	at := metav1.NewTime(t0)
	deletion := pendingIn(t0, nil, Live{}, false)
	deletion.Writer = &refluxv1.Modifier{Operation: refluxv1.DeleteOperation, User: "alice", Time: &at}
	d := Decide(Input{Name: name, Record: Pending(deletion).Record, Live: Live{}, Now: t0.Add(time.Minute)})
	g.Expect(d.Action).To(Equal(Keep), d.Why)

	edit := Pending(pendingIn(t0, nil, unheld, true, `"true"`)).Record
	d = Decide(Input{Name: name, Record: edit, Live: Live{}, Now: t0.Add(time.Minute)})
	g.Expect(d.Action).To(Equal(Resolve), "a pending edit of a gone object is moot")
}
