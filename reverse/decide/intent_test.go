package decide

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestDecideAuditHotfix: a drift first recorded before its user was known
// becomes a manual hotfix when the audit event lands: an event-worthy
// change, counted once, the object marked, and the intent kept once the
// annotation carries it.
func TestDecideAuditHotfix(t *testing.T) {
	g := NewWithT(t)
	by := &refluxv1.HotfixIntent{User: "alice@example.com", Groups: []string{"oncall-breakglass"}, Matched: "group:oncall-breakglass"}
	mark := map[string]string{"ops.source": "manual"}
	first := recorded(t0, true, flag(`"true"`))
	g.Expect(first.Spec.ManualHotfix).To(BeFalse())

	hotfix := func(f refluxv1.DriftField) refluxv1.DriftField {
		f.Action, f.Rule = refluxv1.IgnoreAction, "manual-hotfix"
		return f
	}
	obs := observed(t0.Add(time.Second), hotfix(flag(`"true"`)))
	obs.ManualHotfix, obs.HotfixBy, obs.Mark = true, by, mark
	d := Decide(Input{Name: name, Record: first, Live: held, Evaluated: true, Observation: obs, WantHold: true, Now: t0.Add(time.Second)})
	g.Expect(d.Action).To(Equal(Update), d.Why)
	g.Expect(d.Changed).To(BeTrue(), "the classification changed: a ManualHotfix event")
	g.Expect(d.HotfixMarked).To(BeTrue())
	g.Expect(d.Mark).To(Equal(mark))
	g.Expect(d.Hold).To(Equal(HoldNone), "already held")
	marked := by.DeepCopy()
	marked.MarkedKey = "ops.source"
	g.Expect(d.Record.Spec.ManualHotfixBy).To(Equal(marked), "the record says which annotation reflux adds")

	// Marked: the annotation makes it a hotfix now, and the audit store
	// may have forgotten the write; the record still names who decided.
	later := observed(t0.Add(2*time.Minute), hotfix(flag(`"true"`)))
	later.ManualHotfix = true
	again := Decide(Input{Name: name, Record: d.Record, Live: held, Evaluated: true, Observation: later, WantHold: true, Now: t0.Add(2 * time.Minute)})
	g.Expect(again.Mark).To(BeNil())
	g.Expect(again.Changed).To(BeFalse())
	g.Expect(again.HotfixMarked).To(BeFalse(), "counted once")
	g.Expect(again.Record.Spec.ManualHotfixBy).To(Equal(marked))

	// Dismissed, or released on expiry: the annotation reflux added goes.
	dismissed := with(again.Record, func(d *refluxv1.Drift) { d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"} })
	dis := Decide(Input{Name: name, Record: dismissed, Live: held, Evaluated: true, Observation: later, Now: t0.Add(2 * time.Minute)})
	g.Expect(dis.Action).To(Equal(Dismiss))
	g.Expect(dis.Unmark).To(Equal([]string{"ops.source"}))
	// Resolved (Git now declares the hotfix's value): the mark goes too,
	// or the object's next edit would count as a hotfix.
	res := Decide(Input{Name: name, Record: again.Record, Live: held, Evaluated: true, Declared: true, Now: t0.Add(2 * time.Minute)})
	g.Expect(res.Action).To(Equal(Resolve), res.Why)
	g.Expect(res.Unmark).To(Equal([]string{"ops.source"}))
	limitedHotfix := with(again.Record, func(d *refluxv1.Drift) {
		d.Status.HoldExpiresAt = d.Status.HeldSince.DeepCopy()
	})
	exp := Expiry(ExpiryInput{Record: limitedHotfix, OnExpiry: refluxv1.ExpiryRelease, Now: t0.Add(time.Hour), LiveExists: true})
	g.Expect(exp.Unmark).To(Equal([]string{"ops.source"}))
	kept := Expiry(ExpiryInput{Record: limitedHotfix, OnExpiry: refluxv1.ExpiryAlert, Now: t0.Add(time.Hour), LiveExists: true})
	g.Expect(kept.Unmark).To(BeNil(), "a kept hold keeps its mark")
	g.Expect(Decide(Input{Name: name, Record: with(first, func(d *refluxv1.Drift) {
		d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
	}), Live: held}).Unmark).To(BeNil(), "nothing to unmark on an annotated or ordinary drift")

	// No longer a hotfix (the annotation removed): the intent goes.
	plain := observed(t0.Add(3*time.Minute), flag(`"true"`))
	cleared := Decide(Input{Name: name, Record: again.Record, Live: held, Evaluated: true, Observation: plain, WantHold: true, Now: t0.Add(3 * time.Minute)})
	g.Expect(cleared.Record.Spec.ManualHotfixBy).To(BeNil())

	// A mark is asked for only on a hotfix.
	odd := observed(t0, flag(`"true"`))
	odd.Mark = mark
	g.Expect(Decide(Input{Name: name, Live: unheld, Evaluated: true, Observation: odd, WantHold: true, Now: t0}).Mark).To(BeNil())
}
