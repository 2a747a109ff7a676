package governor

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Audit-derived intent (issue 11): a policy's manualHotfix.fromUsers and
// fromGroups make a drift a manual hotfix when its audited writer matches.
// The live path never waits for the audit log: a change is recorded as
// soon as it is seen, with whatever writer managedFields name, and the
// object is looked at again shortly while a field's user is unknown
// (retryAttribution). When the audit event lands, that re-evaluation
// classifies the drift afresh: the record becomes a manual hotfix naming
// the event's user and groups, a Normal ManualHotfix event is emitted, and
// reflux annotates the object (mark). Meanwhile write-back leaves such a
// record alone (awaitingAttribution), so a hotfix is never pushed because
// its user arrived late.

// mark adds the manual-hotfix annotation a decision asks for, under
// reflux's field manager. Once it is in, the annotation itself makes the
// object a hotfix, so the next evaluation asks for nothing.
func (x *executor) mark(ctx context.Context, p *plan, d decide.Decision) error {
	if x.marker == nil {
		return nil
	}
	if len(d.Unmark) > 0 {
		if err := x.marker.Unmark(ctx, p.obj, d.Unmark); err != nil {
			return err
		}
		x.log.Info("audit-derived manual hotfix closed: annotation removed", "record", p.name,
			"object", p.obj.Kind+"/"+p.obj.Namespace+"/"+p.obj.Name, "annotations", d.Unmark)
	}
	if len(d.Mark) == 0 {
		return nil
	}
	if err := x.marker.Mark(ctx, p.obj, d.Mark); err != nil {
		return err
	}
	x.log.Info("manual hotfix declared by the audit log: object annotated", "record", p.name,
		"object", p.obj.Kind+"/"+p.obj.Namespace+"/"+p.obj.Name, "annotations", d.Mark)
	return nil
}

// awaitingAttribution reports whether an object's writer is still being
// looked for in the audit log, for a Kustomization whose policy declares
// hotfixes from it: write-back waits, since the user may yet make the
// drift a hotfix, which is never written.
func (gv *Governor) awaitingAttribution(id types.NamespacedName, k objKey) bool {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	if e == nil || e.gov.Classifier == nil || !e.gov.Classifier.AuditIntent() {
		return false
	}
	return gv.attributionTries[k] != 0
}

// settleAttribution ends an object's attribution once the evaluation that
// ended it has written the record, and asks for a report so that
// write-back, which waited, looks at the record as written.
func (gv *Governor) settleAttribution(k objKey, owner types.NamespacedName) {
	gv.mu.Lock()
	settled := gv.attributionTries[k] == attributionSettling
	if settled {
		delete(gv.attributionTries, k)
	}
	gv.mu.Unlock()
	if settled {
		gv.opts.Notify(owner)
	}
}

// attributed leaves out the records whose object awaits its audited
// writer (awaitingAttribution) and that no branch carries yet. wait is
// true when one that a branch carries awaits it: rebuilding that branch
// now would push whatever the record says before its user is known, so
// the whole write waits for the attribution to settle.
func (gv *Governor) attributed(id types.NamespacedName, records []refluxv1.Drift) (kept []refluxv1.Drift, wait bool) {
	kept = records[:0:0]
	for _, d := range records {
		o := d.Spec.Object
		k := objKey{GVK: schema.FromAPIVersionAndKind(o.APIVersion, o.Kind), Namespace: o.Namespace, Name: o.Name}
		if !gv.awaitingAttribution(id, k) {
			kept = append(kept, d)
			continue
		}
		gv.opts.Log.V(1).Info("write-back waits for the audit log to name the writer", "record", d.Name)
		if d.Status.Branch != "" && record.IsOpen(&d) {
			wait = true
		}
	}
	return kept, wait
}
