package decide

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/record"
)

var (
	t0  = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	ks  = refluxv1.KustomizationRef{Namespace: "flux-system", Name: "podinfo"}
	obj = refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "podinfo", Name: "podinfo-flags", UID: "u1"}
	// name is the record name of obj.
	name = record.Name(ks, obj)
)

func flag(live string) refluxv1.DriftField {
	return refluxv1.DriftField{Pointer: "/data/FEATURE_DARK_MODE", ChangeType: refluxv1.ChangeAdd, LiveValue: live,
		Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, FluxReverts: true}
}

// objectDeleted is the field of a declared object deleted live.
func objectDeleted() refluxv1.DriftField {
	return refluxv1.DriftField{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeRemove,
		Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh, FluxReverts: true}
}

func observed(at time.Time, fields ...refluxv1.DriftField) record.Observation {
	return record.Observation{Kustomization: ks, Policy: "apps", Object: obj, Revision: "main@sha1:1", Fields: fields, Now: at}
}

// recorded is the record Decide writes for fields seen at at, held or not,
// with its status as the executor leaves it.
func recorded(at time.Time, held bool, fields ...refluxv1.DriftField) *refluxv1.Drift {
	d := Decide(Input{Name: name, Live: Live{Exists: true}, Evaluated: true, Observation: observed(at, fields...),
		WantHold: held, Now: at})
	return d.Record
}

func with(d *refluxv1.Drift, mutate func(*refluxv1.Drift)) *refluxv1.Drift {
	d = d.DeepCopy()
	mutate(d)
	return d
}

var (
	held   = Live{Exists: true, Held: true, HeldBy: name}
	unheld = Live{Exists: true}
)

func TestDecide(t *testing.T) {
	open := recorded(t0, true, flag(`"true"`))
	deleted := metav1.NewTime(t0)
	tests := []struct {
		name string
		in   Input
		// want is the decision's action, hold and flags.
		want            Action
		hold            HoldAction
		changed, reconc bool
		state           refluxv1.DriftState
		// closed is the reason the decision closes the record with.
		closed string
	}{
		{name: "no record, no drift: nothing", in: Input{Live: unheld, Evaluated: true}, want: Keep},
		{name: "no record, no drift, held before evaluation: release", in: Input{Live: held, Evaluated: true}, want: Keep, hold: Release},
		{name: "no record, no drift, held by another record: leave it", in: Input{Live: Live{Exists: true, Held: true, HeldBy: "other"}, Evaluated: true}, want: Keep},
		{name: "new drift that holds: create and hold", in: Input{Live: unheld, Evaluated: true, Observation: observed(t0, flag(`"true"`)), WantHold: true},
			want: Create, hold: Hold, changed: true, state: refluxv1.DriftHeld},
		{name: "new drift held before evaluation: create, no second hold", in: Input{Live: held, Evaluated: true, Observation: observed(t0, flag(`"true"`)), WantHold: true},
			want: Create, changed: true, state: refluxv1.DriftHeld},
		{name: "new drift no rule holds: create, release the early hold", in: Input{Live: held, Evaluated: true, Observation: observed(t0, flag(`"true"`))},
			want: Create, hold: Release, changed: true, state: refluxv1.DriftDetected},
		{name: "same drift again within a minute: nothing", in: Input{Record: open, Live: held, Evaluated: true, Observation: observed(t0.Add(30*time.Second), flag(`"true"`)), WantHold: true},
			want: Keep},
		{name: "same drift past the last-seen resolution: last-seen moves, not a new detection", in: Input{Record: open, Live: held, Evaluated: true, Observation: observed(t0.Add(LastSeenResolution+time.Minute), flag(`"true"`)), WantHold: true},
			want: Update, state: refluxv1.DriftHeld},
		{name: "changed drift: update, a new detection", in: Input{Record: open, Live: held, Evaluated: true, Observation: observed(t0.Add(time.Second), flag(`"false"`)), WantHold: true},
			want: Update, changed: true, state: refluxv1.DriftHeld},
		{name: "open record, drift gone, Git declares it: resolve and release", in: Input{Record: open, Live: held, Evaluated: true, Declared: true},
			want: Resolve, hold: Release, closed: refluxv1.ClosedMergedReason},
		{name: "open record, drift gone unheld, Git does not declare it: keep the evidence", in: Input{Record: open, Live: unheld, Evaluated: true},
			want: Keep},
		{name: "held record, live put back to Git's values: resolve as reverted, release", in: Input{Record: open, Live: held, Evaluated: true},
			want: Resolve, hold: Release, closed: refluxv1.ClosedRevertedReason},
		{name: "held record, Flux last applied before the change: a revert by hand", in: Input{Record: open, Live: held, Evaluated: true, FluxApplied: t0.Add(-time.Hour)},
			want: Resolve, hold: Release, closed: refluxv1.ClosedRevertedReason},
		{name: "held record, Flux applied after the change (an apply crossed the hold): keep it open, release", in: Input{Record: open, Live: held, Evaluated: true, FluxApplied: t0.Add(2 * time.Second)},
			want: Update, hold: Release, state: refluxv1.DriftDetected},
		{name: "held record, Flux applied in the change's second: ambiguous, keep it open", in: Input{Record: open, Live: held, Evaluated: true, FluxApplied: t0.Truncate(time.Second)},
			want: Update, hold: Release, state: refluxv1.DriftDetected},
		{name: "held record, Flux applied in the change's second but a person holds the fields: a revert by hand", in: Input{Record: open, Live: held, Evaluated: true,
			FluxApplied: t0.Truncate(time.Second), Owners: Owners{Writer: true}},
			want: Resolve, hold: Release, closed: refluxv1.ClosedRevertedReason},
		{name: "held record, Flux's apply holds the fields though it wrote long before: an apply crossed the hold", in: Input{Record: open, Live: held, Evaluated: true,
			FluxApplied: t0.Add(-time.Hour), Owners: Owners{Flux: true}},
			want: Update, hold: Release, state: refluxv1.DriftDetected},
		{name: "unheld record, Flux put Git back: keep the evidence as it is", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State, d.Status.HeldSince = refluxv1.DriftDetected, nil
		}), Live: unheld, Evaluated: true, FluxApplied: t0.Add(2 * time.Second)}, want: Keep},
		{name: "unheld record, a person put Git back and owns the fields: a revert by hand", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State, d.Status.HeldSince = refluxv1.DriftDetected, nil
		}), Live: unheld, Evaluated: true, Owners: Owners{Writer: true}},
			want: Resolve, closed: refluxv1.ClosedRevertedReason},
		{name: "unheld record, Flux shares the fields it put back: keep the evidence", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State, d.Status.HeldSince = refluxv1.DriftDetected, nil
		}), Live: unheld, Evaluated: true, Owners: Owners{Writer: true, Flux: true}}, want: Keep},
		{name: "deletion record, recreated and written by another: keep the evidence", in: Input{Record: recorded(t0, false, objectDeleted()),
			Live: unheld, Evaluated: true, Owners: Owners{Writer: true}}, want: Keep},
		{name: "held by another record, drift gone: not this record's revert", in: Input{Record: open, Live: Live{Exists: true, Held: true, HeldBy: "other"}, Evaluated: true},
			want: Keep},
		{name: "dismissed by annotation: dismiss, release, reconcile", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
		}), Live: held, Evaluated: true, Observation: observed(t0, flag(`"true"`))}, want: Dismiss, hold: Release, reconc: true,
			closed: refluxv1.ClosedDismissedReason},
		{name: "dismissed before evaluation is possible: dismiss anyway", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
		}), Live: held}, want: Dismiss, hold: Release, reconc: true, closed: refluxv1.ClosedDismissedReason},
		{name: "deleted record: dismiss", in: Input{Record: with(open, func(d *refluxv1.Drift) { d.DeletionTimestamp = &deleted }), Live: held, Evaluated: true},
			want: Dismiss, hold: Release, reconc: true, closed: refluxv1.ClosedRecordDeletedReason},
		{name: "deleted and dismissed, Flux restored Git: finalize", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.DeletionTimestamp = &deleted
			d.Status.State, d.Status.HeldSince = refluxv1.DriftDismissed, nil
		}), Live: unheld, Evaluated: true}, want: Finalize},
		{name: "deleted and dismissed, object gone: finalize", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.DeletionTimestamp = &deleted
			d.Status.State = refluxv1.DriftDismissed
		}), Live: Live{}}, want: Finalize},
		{name: "deleted and dismissed, still drifting: wait for Flux", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.DeletionTimestamp = &deleted
			d.Status.State = refluxv1.DriftDismissed
		}), Live: unheld, Evaluated: true, Observation: observed(t0, flag(`"true"`))}, want: Keep},
		{name: "dismissed, same drift while Flux restores: nothing", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State, d.Status.HeldSince = refluxv1.DriftDismissed, nil
		}), Live: unheld, Evaluated: true, Observation: observed(t0, flag(`"true"`)), WantHold: true}, want: Keep},
		{name: "dismissed before its status was first written, same drift while Flux restores: nothing", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			// A reviewer's dismissal between the record's create and its
			// status write: the executor's status write conflicts, and the
			// retry dismisses a record whose status says nothing else.
			d.Status = refluxv1.DriftStatus{State: refluxv1.DriftDismissed, Closed: Dismissal(d, t0)}
		}), Live: unheld, Evaluated: true, Observation: observed(t0, flag(`"true"`)), WantHold: true}, want: Keep},
		// The closed records below keep heldSince: their release is owed
		// (OwesRelease), so finishing it is an Expire, which writes that
		// it happened.
		{name: "dismissed, but the release failed: finish it, and Flux restores Git now", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State = refluxv1.DriftDismissed
		}), Live: held, Evaluated: true, Observation: observed(t0, flag(`"true"`)), WantHold: true}, want: Expire, hold: Release, reconc: true},
		{name: "released as its hold expired, but the release failed: the same", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State = refluxv1.DriftExpired
		}), Live: held, Evaluated: true, Observation: observed(t0, flag(`"true"`)), WantHold: true}, want: Expire, hold: Release, reconc: true},
		{name: "expired, release failed, not evaluated yet: finish it all the same", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State = refluxv1.DriftExpired
		}), Live: held}, want: Expire, hold: Release, reconc: true},
		{name: "resolved, but the release failed: finish it; Git has the value already", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State = refluxv1.DriftResolved
		}), Live: held}, want: Expire, hold: Release},
		{name: "resolved, then a new drift: reopen and hold", in: Input{Record: with(open, func(d *refluxv1.Drift) {
			d.Status.State, d.Status.HeldSince = refluxv1.DriftResolved, nil
		}), Live: unheld, Evaluated: true, Observation: observed(t0.Add(time.Hour), flag(`"later"`)), WantHold: true, Now: t0.Add(time.Hour)},
			want: Reopen, hold: Hold, changed: true, state: refluxv1.DriftHeld},
		{name: "not evaluated, nothing asked: wait", in: Input{Record: open, Live: held}, want: Keep},
		{name: "object gone, open record: left for the delete handling", in: Input{Record: open, Live: Live{}}, want: Keep},
		{name: "declared object deleted: create, never hold", in: Input{Live: Live{}, Evaluated: true, Observation: observed(t0, objectDeleted()), WantHold: true},
			want: Create, changed: true, state: refluxv1.DriftDetected},
		{name: "held object deleted: the record becomes the deletion, no hold left", in: Input{Record: open, Live: Live{}, Evaluated: true, Observation: observed(t0, objectDeleted())},
			want: Update, changed: true, state: refluxv1.DriftDetected},
		{name: "deletion record, object recreated by Flux: keep the evidence", in: Input{Record: recorded(t0, false, objectDeleted()), Live: unheld, Evaluated: true},
			want: Keep},
		{name: "deletion record, Git no longer renders the object: resolve", in: Input{Record: recorded(t0, false, objectDeleted()), Live: unheld, Evaluated: true, Declared: true},
			want: Resolve, closed: refluxv1.ClosedMergedReason},
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
			g.Expect(d.Changed).To(Equal(tt.changed), "changed")
			g.Expect(d.RequestReconcile).To(Equal(tt.reconc), "reconcile")
			if tt.state != "" {
				g.Expect(d.Record.Status.State).To(Equal(tt.state))
			}
			if tt.closed == "" {
				g.Expect(d.Closed).To(BeNil())
				return
			}
			g.Expect(d.Closed).ToNot(BeNil())
			g.Expect(d.Closed.Reason).To(Equal(tt.closed))
			g.Expect(d.Closed.Message).ToNot(BeEmpty())
			g.Expect(d.Closed.Time.Time).To(Equal(in.Now))
		})
	}
}

// TestLostToFlux: Flux's write counts against the change's own time when
// the record names its writer, else against first-seen, to the second.
func TestLostToFlux(t *testing.T) {
	changed := metav1.NewTime(t0.Add(10*time.Minute + 400*time.Millisecond))
	withWriter := with(recorded(t0, true, flag(`"true"`)), func(d *refluxv1.Drift) {
		d.Spec.LastModifier = &refluxv1.Modifier{Manager: "kubectl-edit", Time: &changed}
	})
	noWriter := recorded(t0, true, flag(`"true"`))
	for _, tt := range []struct {
		name   string
		rec    *refluxv1.Drift
		owners Owners
		flux   time.Time
		want   bool
	}{
		{"Flux never wrote", withWriter, Owners{}, time.Time{}, false},
		{"Flux wrote before the change", withWriter, Owners{}, changed.Add(-time.Second), false},
		{"Flux wrote between first-seen and a later change", withWriter, Owners{}, t0.Add(time.Minute), false},
		{"Flux wrote in the change's second", withWriter, Owners{}, changed.Truncate(time.Second), true},
		{"Flux wrote after the change", withWriter, Owners{}, changed.Add(time.Second), true},
		{"no writer known: first-seen is the change", noWriter, Owners{}, t0.Add(time.Second), true},
		{"no writer known, Flux wrote earlier", noWriter, Owners{}, t0.Add(-time.Second), false},
		// Who owns the fields outweighs the time.
		{"a person holds the fields, Flux wrote in the change's second", withWriter, Owners{Writer: true}, changed.Truncate(time.Second), false},
		{"a person holds the fields, Flux wrote after the change", withWriter, Owners{Writer: true}, changed.Add(time.Second), false},
		{"Flux's apply holds the fields, its time unknown", withWriter, Owners{Flux: true}, time.Time{}, true},
		{"Flux's apply holds the fields it wrote before the change", withWriter, Owners{Flux: true}, changed.Add(-time.Second), true},
		{"both hold fields: a person's value stands", withWriter, Owners{Flux: true, Writer: true}, changed.Add(time.Second), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(LostToFlux(tt.rec, tt.owners, tt.flux)).To(Equal(tt.want))
		})
	}
}

// TestManualHotfixRecordSaysWhatItIs: a declared hotfix's record shows
// ManualHotfix, not Ignore, and its fingerprint comes from its fields
// (issue 17 §4): two different hotfixes never share one, so a closed
// hotfix reopens for a new one.
func TestManualHotfixRecordSaysWhatItIs(t *testing.T) {
	g := NewWithT(t)
	ignored := func(live string) refluxv1.DriftField {
		f := flag(live)
		f.Action = refluxv1.IgnoreAction
		return f
	}
	hotfix := func(at time.Time, live string) record.Observation {
		o := observed(at, ignored(live))
		o.ManualHotfix = true
		return o
	}
	first := Decide(Input{Name: name, Live: unheld, Evaluated: true, Observation: hotfix(t0, `"true"`), WantHold: true, Now: t0}).Record
	g.Expect(first.Status.Action).To(Equal(refluxv1.DriftManualHotfix))
	g.Expect(first.Status.State).To(Equal(refluxv1.DriftHeld))
	g.Expect(first.Status.Fingerprint).To(HaveLen(12))
	g.Expect(first.Status.Fingerprint).ToNot(Equal("e3b0c44298fc"), "not the hash of empty input")

	other := Decide(Input{Name: name, Live: unheld, Evaluated: true, Observation: hotfix(t0, `"false"`), WantHold: true, Now: t0}).Record
	g.Expect(other.Status.Fingerprint).ToNot(Equal(first.Status.Fingerprint))

	closed := with(first, func(d *refluxv1.Drift) { d.Status.State, d.Status.HeldSince = refluxv1.DriftDismissed, nil })
	later := t0.Add(time.Hour)
	d := Decide(Input{Name: name, Record: closed, Live: unheld, Evaluated: true, Observation: hotfix(later, `"false"`), WantHold: true, Now: later})
	g.Expect(d.Action).To(Equal(Reopen), "a new hotfix is a new drift")
	same := Decide(Input{Name: name, Record: closed, Live: unheld, Evaluated: true, Observation: hotfix(later, `"true"`), WantHold: true, Now: later})
	g.Expect(same.Action).To(Equal(Keep), "the dismissed hotfix itself, while Flux restores Git")
}

func TestDecideKeepsHistory(t *testing.T) {
	g := NewWithT(t)
	first := recorded(t0, true, flag(`"true"`))
	g.Expect(first.Name).To(Equal(name))
	g.Expect(first.Spec.FirstSeen.Time).To(Equal(t0))
	g.Expect(first.Status.HeldSince.Time).To(Equal(t0))
	g.Expect(first.Status.Fingerprint).To(Equal(record.Fingerprint(first)))
	g.Expect(first.Status.Fingerprint).To(Equal(reverse.Fingerprint([]refluxv1.Drift{*first})), "a Merge field is bound for Git")

	later := t0.Add(time.Hour)
	d := Decide(Input{Name: name, Record: first, Live: held, Evaluated: true, WantHold: true,
		Observation: observed(later, flag(`"false"`)), Now: later})
	g.Expect(d.Record.Spec.FirstSeen.Time).To(Equal(t0), "first-seen survives a changed value")
	g.Expect(d.Record.Status.HeldSince.Time).To(Equal(t0), "held since the first hold")
	g.Expect(d.HeldSince).To(Equal(t0))

	reopen := Decide(Input{Name: name, Live: unheld, Evaluated: true, WantHold: true, Now: later,
		Record:      with(first, func(r *refluxv1.Drift) { r.Status.State = refluxv1.DriftResolved; r.Status.Branch = "b" }),
		Observation: observed(later, flag(`"other"`))})
	g.Expect(reopen.Record.Spec.FirstSeen.Time).To(Equal(later), "a reopened record starts over")
	g.Expect(reopen.Record.Status.Branch).To(BeEmpty(), "the old branch belongs to the old drift")
	g.Expect(reopen.Record.Status.HeldSince.Time).To(Equal(later))
}

func TestDecideProposedStaysProposed(t *testing.T) {
	g := NewWithT(t)
	rec := with(recorded(t0, true, flag(`"true"`)), func(r *refluxv1.Drift) {
		r.Status.State, r.Status.Branch, r.Status.Commit = refluxv1.DriftProposed, "reflux/x/abc", "c1"
	})
	same := Decide(Input{Name: name, Record: rec, Live: held, Evaluated: true, WantHold: true,
		Observation: observed(t0.Add(2*time.Minute), flag(`"true"`)), Now: t0.Add(2 * time.Minute)})
	g.Expect(same.Record.Status.State).To(Equal(refluxv1.DriftProposed), "the branch carries exactly this drift")
	changed := Decide(Input{Name: name, Record: rec, Live: held, Evaluated: true, WantHold: true,
		Observation: observed(t0.Add(time.Second), flag(`"false"`)), Now: t0.Add(time.Second)})
	g.Expect(changed.Record.Status.State).To(Equal(refluxv1.DriftHeld), "the branch no longer carries the drift")
	g.Expect(changed.Record.Status.Branch).To(Equal("reflux/x/abc"), "its branch stays known, for the next commit on it")
}

func TestOnBranch(t *testing.T) {
	base := recorded(t0, true, flag(`"true"`))
	intended := with(base, func(r *refluxv1.Drift) { r.Status.Branch, r.Status.BranchFingerprint = "reflux/b/fp1", "fp1" })
	pushed := with(intended, func(r *refluxv1.Drift) { r.Status.Commit, r.Status.State = "c1", refluxv1.DriftProposed })
	tests := []struct {
		name   string
		rec    *refluxv1.Drift
		ev     Branch
		want   Action
		hold   HoldAction
		branch string
		commit string
		state  refluxv1.DriftState
	}{
		{"intent before the push", base, Branch{Event: Intended, Branch: "reflux/b/fp1", Fingerprint: "fp1"}, SetStatus, HoldNone, "reflux/b/fp1", "", refluxv1.DriftHeld},
		{"intent recorded again: nothing", intended, Branch{Event: Intended, Branch: "reflux/b/fp1", Fingerprint: "fp1"}, Keep, HoldNone, "", "", ""},
		{"intent on another branch forgets the old commit", pushed, Branch{Event: Intended, Branch: "reflux/b/fp2", Fingerprint: "fp2"}, SetStatus, HoldNone, "reflux/b/fp2", "", refluxv1.DriftProposed},
		{"pushed", intended, Branch{Event: Pushed, Branch: "reflux/b/fp1", Commit: "c1", Fingerprint: "fp1"}, SetStatus, HoldNone, "reflux/b/fp1", "c1", refluxv1.DriftProposed},
		{"push failed before it left: the intent goes", intended, Branch{Event: Abandoned, Branch: "reflux/b/fp1"}, SetStatus, HoldNone, "", "", refluxv1.DriftHeld},
		{"a failed push never undoes an earlier one", pushed, Branch{Event: Abandoned, Branch: "reflux/b/fp1"}, Keep, HoldNone, "", "", ""},
		{"pushed branch deleted: dismiss and release", pushed, Branch{Event: Closed, Branch: "reflux/b/fp1"}, Dismiss, Release, "", "", ""},
		{"a branch only intended is not a reviewer's deletion", intended, Branch{Event: Closed, Branch: "reflux/b/fp1"}, Keep, HoldNone, "", "", ""},
		{"late result on a resolved record: nothing", with(pushed, func(r *refluxv1.Drift) { r.Status.State = refluxv1.DriftResolved }),
			Branch{Event: Pushed, Branch: "reflux/b/fp1", Commit: "c2"}, Keep, HoldNone, "", "", ""},
		{"withdrawn from its branch: no longer Proposed, held again", pushed, Branch{Event: Withdrawn, Branch: "reflux/b/fp1", Now: t0},
			SetStatus, HoldNone, "", "", refluxv1.DriftHeld},
		{"withdrawn from a branch it is not on: nothing", pushed, Branch{Event: Withdrawn, Branch: "reflux/b/other", Now: t0},
			Keep, HoldNone, "", "", ""},
		{"not written: off its branch, with the reason", pushed, Branch{Event: NotWritten, Reason: refluxv1.RefusedReason, Message: "why", Now: t0},
			SetStatus, HoldNone, "", "", refluxv1.DriftHeld},
		{"not written, never on a branch: the reason only", base, Branch{Event: NotWritten, Reason: refluxv1.RefusedReason, Message: "why", Now: t0},
			SetStatus, HoldNone, "", "", refluxv1.DriftHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := OnBranch(tt.rec, tt.ev, true)
			g.Expect(d.Action).To(Equal(tt.want), d.Why)
			g.Expect(d.Hold).To(Equal(tt.hold))
			if d.Action == SetStatus {
				g.Expect(d.Record.Status.Branch).To(Equal(tt.branch))
				g.Expect(d.Record.Status.Commit).To(Equal(tt.commit))
				g.Expect(d.Record.Status.State).To(Equal(tt.state))
				g.Expect(tt.rec.Status.Branch).NotTo(Equal("changed"), "the input is not mutated")
			}
			if tt.want == Dismiss {
				g.Expect(d.RequestReconcile).To(BeTrue())
				g.Expect(d.Closed.Reason).To(Equal(refluxv1.ClosedBranchDeletedReason))
			}
			if d.Action == SetStatus && (tt.ev.Event == Withdrawn || tt.ev.Event == NotWritten || tt.ev.Event == Pushed) {
				c := apimeta.FindStatusCondition(d.Record.Status.Conditions, refluxv1.ReverseSyncedCondition)
				g.Expect(c).ToNot(BeNil(), "ReverseSynced says whether a branch carries the record")
				g.Expect(c.Status == metav1.ConditionTrue).To(Equal(tt.ev.Event == Pushed))
			}
		})
	}
	g := NewWithT(t)
	g.Expect(BranchPushed(pushed)).To(BeTrue())
	g.Expect(BranchPushed(intended)).To(BeFalse())
}

func TestOnBranchPullRequest(t *testing.T) {
	g := NewWithT(t)
	base := recorded(t0, true, flag(`"true"`))
	intended := with(base, func(r *refluxv1.Drift) { r.Status.Branch, r.Status.BranchFingerprint = "reflux/b/fp1", "fp1" })
	url := "http://forge.example/o/r/pulls/1"

	d := OnBranch(intended, Branch{Event: Pushed, Branch: "reflux/b/fp1", Commit: "c1", Fingerprint: "fp1", PullRequest: url}, true)
	g.Expect(d.Action).To(Equal(SetStatus))
	g.Expect(d.Record.Status.PullRequest).To(Equal(url), "the record links its pull request")

	// A later push whose pull request the forge failed to answer keeps
	// the link it had.
	withPR := d.Record
	d = OnBranch(withPR, Branch{Event: Pushed, Branch: "reflux/b/fp1", Commit: "c2", Fingerprint: "fp1"}, true)
	g.Expect(d.Action).To(Equal(SetStatus))
	g.Expect(d.Record.Status.PullRequest).To(Equal(url))

	// Moving to another branch forgets the old branch's pull request.
	d = OnBranch(withPR, Branch{Event: Intended, Branch: "reflux/b/fp2", Fingerprint: "fp2"}, true)
	g.Expect(d.Record.Status.PullRequest).To(BeEmpty())

	// A push after a reviewer closed the pull request (issue 22 §3): the
	// record it proposed keeps it, one that joined the branch since is
	// not recorded with it, so the branch check writes it again.
	closed := Branch{Event: Pushed, Branch: "reflux/b/fp1", Commit: "c3", Fingerprint: "fp3", PullRequest: url, PullRequestClosed: true}
	d = OnBranch(withPR, closed, true)
	g.Expect(d.Record.Status.PullRequest).To(Equal(url))
	d = OnBranch(intended, closed, true)
	g.Expect(d.Record.Status.PullRequest).To(BeEmpty(), "the reviewer never saw it")
	g.Expect(d.Record.Status.Commit).To(Equal("c3"))
}

func TestDeclares(t *testing.T) {
	want := &unstructured.Unstructured{Object: map[string]any{
		"data": map[string]any{"FEATURE_DARK_MODE": "true"}, "spec": map[string]any{"replicas": int64(5)},
	}}
	tests := []struct {
		name   string
		want   *unstructured.Unstructured
		fields []refluxv1.DriftField
		ok     bool
	}{
		{"merged", want, []refluxv1.DriftField{flag(`"true"`)}, true},
		{"a number by value", want, []refluxv1.DriftField{{Pointer: "/spec/replicas", ChangeType: refluxv1.ChangeUpdate, LiveValue: "5.0"}}, true},
		{"another value in Git", want, []refluxv1.DriftField{flag(`"false"`)}, false},
		{"removed live and gone from Git", want, []refluxv1.DriftField{{Pointer: "/data/OLD", ChangeType: refluxv1.ChangeRemove}}, true},
		{"removed live, still in Git", want, []refluxv1.DriftField{{Pointer: "/data/FEATURE_DARK_MODE", ChangeType: refluxv1.ChangeRemove}}, false},
		{"object left the render", nil, []refluxv1.DriftField{flag(`"true"`)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Declares(tt.want, tt.fields)).To(Equal(tt.ok))
		})
	}
}

// TestDecideHotfixMarked counts the break-glass annotation once per use:
// on the decision that first records the object as a manual hotfix, never
// on the resyncs and restarts that find it already recorded.
func TestDecideHotfixMarked(t *testing.T) {
	hotfix := func(at time.Time, live string) record.Observation {
		o := observed(at, flag(live))
		o.ManualHotfix = true
		return o
	}
	plain := recorded(t0, true, flag(`"true"`))
	marked := Decide(Input{Name: name, Live: unheld, Evaluated: true, Observation: hotfix(t0, `"true"`), WantHold: true, Now: t0}).Record
	resolved := with(marked, func(d *refluxv1.Drift) { d.Status.State, d.Status.HeldSince = refluxv1.DriftResolved, nil })
	later := t0.Add(LastSeenResolution + time.Minute)
	tests := []struct {
		name   string
		rec    *refluxv1.Drift
		obs    record.Observation
		action Action
		marked bool
	}{
		{"new hotfix: counted", nil, hotfix(t0, `"true"`), Create, true},
		{"new drift without the annotation: not counted", nil, observed(t0, flag(`"true"`)), Create, false},
		{"open drift annotated afterwards: counted", plain, hotfix(t0.Add(time.Second), `"true"`), Update, true},
		{"resync or restart, same hotfix: not counted again", marked, hotfix(t0.Add(30*time.Second), `"true"`), Keep, false},
		{"same hotfix past the last-seen resolution (last-seen moves): not counted again", marked, hotfix(later, `"true"`), Update, false},
		{"hotfix changes its value: still one use", marked, hotfix(t0.Add(time.Second), `"false"`), Update, false},
		{"annotation removed: not counted", marked, observed(t0.Add(time.Second), flag(`"true"`)), Update, false},
		{"resolved hotfix, then a new one: counted", resolved, hotfix(t0.Add(time.Hour), `"again"`), Reopen, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			live := held
			if tt.rec == nil || !record.IsOpen(tt.rec) {
				live = unheld
			}
			d := Decide(Input{Name: name, Record: tt.rec, Live: live, Evaluated: true, Observation: tt.obs, WantHold: true, Now: tt.obs.Now})
			g.Expect(d.Action).To(Equal(tt.action), d.Why)
			g.Expect(d.HotfixMarked).To(Equal(tt.marked))
			if d.Record != nil {
				g.Expect(d.Record.Spec.ManualHotfix).To(Equal(tt.obs.ManualHotfix))
			}
		})
	}
}

// TestLostLiveSaysWhoOverwroteTheHold: a held change Flux undid keeps its
// record open with LostLive True, naming kustomize-controller's in-flight
// apply or the Helm release helm-controller upgraded to, and raises the
// event (Lost); holding the object again clears the condition.
func TestLostLiveSaysWhoOverwroteTheHold(t *testing.T) {
	open := recorded(t0, true, flag(`"true"`))
	held := Live{Exists: true, Held: true, HeldBy: name}
	for _, tt := range []struct {
		upgrade, reason, says string
	}{
		{"", refluxv1.OverwrittenByFluxReason, "Flux's apply, already under way"},
		{"apps/web", refluxv1.OverwrittenByUpgradeReason, "helm-controller's upgrade of HelmRelease apps/web applied the chart over the hold"},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			now := t0.Add(time.Hour)
			d := Decide(Input{Name: name, Record: open, Live: held, Evaluated: true, Owners: Owners{Flux: true}, Upgrade: tt.upgrade, Now: now})
			g.Expect(d.Action).To(Equal(Update), d.Why)
			g.Expect(d.Lost).To(BeTrue())
			g.Expect(d.Hold).To(Equal(Release))
			g.Expect(d.Why).To(ContainSubstring(tt.says))
			c := apimeta.FindStatusCondition(d.Record.Status.Conditions, refluxv1.LostLiveCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect([]any{c.Status, c.Reason, c.Message, c.LastTransitionTime.Time}).To(Equal([]any{metav1.ConditionTrue, tt.reason, d.Why, now}))

			again := Decide(Input{Name: name, Record: d.Record, Live: Live{Exists: true}, Evaluated: true, WantHold: true, Now: now.Add(time.Minute),
				Observation: observed(now.Add(time.Minute), flag(`"true"`))})
			g.Expect(again.Lost).To(BeFalse())
			g.Expect(apimeta.FindStatusCondition(again.Record.Status.Conditions, refluxv1.LostLiveCondition)).To(BeNil(), "held again: live again")
		})
	}
}

// TestAResyncConfirmingTheSameDriftWritesNothing: the resync looks at
// every held object at its Kustomization's interval, and the same drift
// seen again must not rewrite the record only to move lastSeen, or every
// record is written at every resync (the soak's drain).
func TestAResyncConfirmingTheSameDriftWritesNothing(t *testing.T) {
	g := NewWithT(t)
	rec := recorded(t0, true, key("B", `"b"`))
	for _, after := range []time.Duration{time.Minute + time.Second, 5 * time.Minute, 59 * time.Minute} {
		at := t0.Add(after)
		d := Decide(Input{Name: name, Record: rec, Live: held, Evaluated: true, WantHold: true,
			Observation: observed(at, key("B", `"b"`)), Now: at})
		g.Expect(d.Action).To(Equal(Keep), "confirmed %s later", after)
		g.Expect(d.WriteSpec || d.WriteStatus).To(BeFalse(), "confirmed %s later", after)
	}
	at := t0.Add(LastSeenResolution + time.Second)
	d := Decide(Input{Name: name, Record: rec, Live: held, Evaluated: true, WantHold: true,
		Observation: observed(at, key("B", `"b"`)), Now: at})
	g.Expect(d.WriteSpec).To(BeTrue(), "lastSeen moves once its resolution has passed")
	g.Expect(d.Record.Spec.LastSeen.Time).To(Equal(at))
}
