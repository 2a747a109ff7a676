package decide

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// key is a Merge flag like the soak's: a data key Git does not declare.
func key(k, live string) refluxv1.DriftField {
	return refluxv1.DriftField{Pointer: "/data/" + k, ChangeType: refluxv1.ChangeAdd, LiveValue: live,
		Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, FluxReverts: true}
}

// awaiting is key k once Git declares it and the held live object still
// lacks it.
func awaiting(k, value string) refluxv1.DriftField {
	return refluxv1.DriftField{Pointer: "/data/" + k, ChangeType: refluxv1.ChangeRemove, GitValue: value,
		Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, FluxReverts: true}
}

func pointers(fs []refluxv1.DriftField) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Pointer)
	}
	return out
}

func lostLive(d *refluxv1.Drift) {
	d.Status.HeldSince = nil
	apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: refluxv1.LostLiveCondition,
		Status: metav1.ConditionTrue, Reason: refluxv1.OverwrittenByFluxReason, Message: "lost"})
}

func TestCarry(t *testing.T) {
	heldA := recorded(t0, true, key("A", `"a"`))
	lostA := with(heldA, lostLive)
	unheldA := recorded(t0, false, key("A", `"a"`))
	pending := with(heldA, func(d *refluxv1.Drift) { d.Status.State = refluxv1.DriftPending })
	dismissed := with(lostA, func(d *refluxv1.Drift) { d.Status.State = refluxv1.DriftDismissed })
	none := func(refluxv1.DriftField) bool { return false }
	all := func(refluxv1.DriftField) bool { return true }

	cases := []struct {
		name     string
		rec      *refluxv1.Drift
		found    []refluxv1.DriftField
		merged   func(refluxv1.DriftField) bool
		lost     func(refluxv1.DriftField) bool
		wantObs  []string
		carried  []string
		wantLost bool
	}{
		{name: "a held field a person took back is dropped", rec: heldA, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: none, wantObs: []string{"/data/B"}, carried: []string{}},
		{name: "a held field Flux's in-flight apply took is kept", rec: heldA, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: none, lost: all, wantObs: []string{"/data/B"}, carried: []string{"/data/A"}, wantLost: true},
		{name: "a field lost over its hold is kept when another drifts", rec: lostA, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: none, wantObs: []string{"/data/B"}, carried: []string{"/data/A"}, wantLost: true},
		{name: "an unheld field Flux reverted is kept", rec: unheldA, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: none, lost: all, wantObs: []string{"/data/B"}, carried: []string{"/data/A"}, wantLost: true},
		{name: "an unheld field a person put back is dropped", rec: unheldA, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: none, wantObs: []string{"/data/B"}, carried: []string{}},
		{name: "a field Flux does not revert was put back by a person", rec: with(unheldA, func(d *refluxv1.Drift) {
			d.Spec.Fields[0].FluxReverts = false
		}), found: []refluxv1.DriftField{key("B", `"b"`)}, merged: none, lost: all, wantObs: []string{"/data/B"}, carried: []string{}},
		{name: "a lost field Git declares and Flux applied is done", rec: lostA, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: all, wantObs: []string{"/data/B"}, carried: []string{}},
		{name: "a merged field the held object lacks waits for Flux, not a removal",
			rec: lostA, found: []refluxv1.DriftField{awaiting("A", `"a"`), key("B", `"b"`)},
			merged: all, wantObs: []string{"/data/B"}, carried: []string{"/data/A"}},
		{name: "nothing but the merge waiting for Flux", rec: lostA, found: []refluxv1.DriftField{awaiting("A", `"a"`)},
			merged: all, wantObs: []string{}, carried: []string{"/data/A"}},
		{name: "another value than the record saw is drift", rec: lostA, found: []refluxv1.DriftField{awaiting("A", `"z"`)},
			merged: none, wantObs: []string{"/data/A"}, carried: []string{}},
		{name: "a pending record's fields are the render's to fill", rec: pending, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: none, lost: all, wantObs: []string{"/data/B"}, carried: []string{}},
		{name: "a closed record carries nothing", rec: dismissed, found: []refluxv1.DriftField{key("B", `"b"`)},
			merged: none, wantObs: []string{"/data/B"}, carried: []string{}},
		{name: "no record", found: []refluxv1.DriftField{key("B", `"b"`)}, merged: none, wantObs: []string{"/data/B"}, carried: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			lost := tc.lost
			if lost == nil {
				lost = none
			}
			got := Carry(tc.rec, observed(t0, tc.found...), tc.merged, lost)
			g.Expect(pointers(got.Observation.Fields)).To(Equal(tc.wantObs))
			g.Expect(pointers(got.Fields)).To(Equal(tc.carried))
			g.Expect(got.Lost).To(Equal(tc.wantLost))
		})
	}
}

// TestDecideKeepsEvidenceFluxUndid is the soak's sequence: A held, lost
// to Flux's in-flight apply, then B drifts and is held; the proposal
// carries both, is merged, and the record resolves without proposing
// A's removal while the held object still lacks it.
func TestDecideKeepsEvidenceFluxUndid(t *testing.T) {
	g := NewWithT(t)
	lostA := with(recorded(t0, true, key("A", `"a"`)), lostLive)

	d := Decide(Input{Name: name, Record: lostA, Live: held, Evaluated: true, WantHold: true,
		Observation: observed(t0.Add(time.Minute), key("B", `"b"`)), Now: t0.Add(time.Minute)})
	g.Expect(d.Action).To(Equal(Update))
	g.Expect(pointers(d.Record.Spec.Fields)).To(ConsistOf("/data/A", "/data/B"))
	g.Expect(apimeta.IsStatusConditionTrue(d.Record.Status.Conditions, refluxv1.LostLiveCondition)).To(BeTrue(),
		"A is still only evidence")
	both := d.Record

	// Both merged: Git declares A and B; the held object has B, not A.
	merged := Decide(Input{Name: name, Record: both, Live: held, Evaluated: true, Declared: true,
		Merged:      func(refluxv1.DriftField) bool { return true },
		Observation: observed(t0.Add(2*time.Minute), awaiting("A", `"a"`)), Now: t0.Add(2 * time.Minute)})
	g.Expect(merged.Action).To(Equal(Resolve), merged.Why)
	g.Expect(merged.Closed.Reason).To(Equal(refluxv1.ClosedMergedReason))
	g.Expect(merged.Hold).To(Equal(Release), "released, so that Flux applies A")
	g.Expect(merged.RequestReconcile).To(BeTrue(), "and Flux, which skipped the held object, is asked to apply now")
}

// TestFieldLost: Flux took a field off the live object when it owns the
// field now, or, when nobody does (an added key removed), when it wrote
// the object at or after the field's change; a writer who owns it put it
// back.
func TestFieldLost(t *testing.T) {
	changed := metav1.NewTime(t0.Add(1500 * time.Millisecond))
	f := key("A", `"a"`)
	f.Modifier = &refluxv1.Modifier{Manager: "kubectl-edit", Time: &changed}
	tests := []struct {
		name   string
		owners Owners
		flux   time.Time
		want   bool
	}{
		{name: "a writer owns it", owners: Owners{Writer: true}, flux: t0.Add(time.Hour)},
		{name: "Flux owns it", owners: Owners{Flux: true}, want: true},
		{name: "nobody, Flux wrote after", flux: t0.Add(time.Minute), want: true},
		{name: "nobody, Flux wrote in the change's second", flux: t0.Add(time.Second), want: true},
		{name: "nobody, Flux wrote before", flux: t0},
		{name: "nobody, Flux never wrote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(FieldLost(f, tt.owners, tt.flux)).To(Equal(tt.want))
		})
	}
}

// TestCarriedEvidenceSaysItIsLost: a held record whose field Flux's
// in-flight apply took before reflux saw it happen, then another field
// drifts: the record keeps both and says part of it is lost live, which
// keeps it carried at the next look, whatever the managedFields say then.
func TestCarriedEvidenceSaysItIsLost(t *testing.T) {
	g := NewWithT(t)
	heldA := recorded(t0, true, key("A", `"a"`))
	d := Decide(Input{Name: name, Record: heldA, Live: held, Evaluated: true, WantHold: true,
		Lost:        func(f refluxv1.DriftField) bool { return f.Pointer == "/data/A" },
		Observation: observed(t0.Add(time.Minute), key("B", `"b"`)), Now: t0.Add(time.Minute)})
	g.Expect(pointers(d.Record.Spec.Fields)).To(ConsistOf("/data/A", "/data/B"))
	g.Expect(apimeta.IsStatusConditionTrue(d.Record.Status.Conditions, refluxv1.LostLiveCondition)).To(BeTrue())
	g.Expect(d.WriteStatus).To(BeTrue())

	at := t0.Add(time.Minute + 10*time.Second)
	again := Decide(Input{Name: name, Record: d.Record, Live: held, Evaluated: true, WantHold: true,
		Observation: observed(at, key("B", `"b"`)), Now: at})
	g.Expect(again.Action).To(Equal(Keep), "the same drift seen again writes nothing (the soak's write storm)")
	g.Expect(again.WriteSpec || again.WriteStatus).To(BeFalse())

	later := t0.Add(3 * time.Minute)
	again = Decide(Input{Name: name, Record: d.Record, Live: held, Evaluated: true, WantHold: true,
		Observation: observed(later, key("B", `"b"`)), Now: later})
	g.Expect(pointers(again.Record.Spec.Fields)).To(Equal([]string{"/data/A", "/data/B"}), "still carried, in pointer order")
	g.Expect(apimeta.IsStatusConditionTrue(again.Record.Status.Conditions, refluxv1.LostLiveCondition)).To(BeTrue())
	g.Expect(again.WriteSpec || again.WriteStatus).To(BeFalse(), "the same drift, still carried, writes nothing")
}
