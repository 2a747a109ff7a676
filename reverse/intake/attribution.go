package intake

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The live path never waits for the audit log: a change is recorded as
// soon as it is seen, with whatever writer managedFields name, and the
// object is looked at again shortly while a field's user is unknown
// (RetryAttribution). Meanwhile write-back leaves a record of a policy
// that declares hotfixes from the audit log alone
// (AwaitingAttribution), so a hotfix is never pushed because its user
// arrived late (issue 11).

// AttributionRetries bounds how often an object is looked at again for a
// user the audit log has not delivered yet.
const AttributionRetries = 10

// attributionSettling marks an object whose attribution is over (found, or
// given up) while the evaluation that saw it is still writing the record.
const attributionSettling = -1

// attributionDelay is how soon an object is looked at again for its user:
// the apiserver batches audit events. Each later look waits twice as long,
// up to attributionDelayMax, so that the audit log has about half a
// minute to deliver: a loaded apiserver's webhook batches lag by seconds,
// and a user given up on stays unnamed until the next resync.
const (
	attributionDelay    = 500 * time.Millisecond
	attributionDelayMax = 4 * time.Second
)

// AttributionWait is how long the try-th look (from 1) waits.
func AttributionWait(try int) time.Duration {
	d := attributionDelay
	for i := 1; i < try && d < attributionDelayMax; i++ {
		d *= 2
	}
	return min(d, attributionDelayMax)
}

// RetryAttribution looks at an object again shortly when some field has no
// user yet (missing): the record is written within milliseconds of the
// change, and the apiserver batches audit events, so the user often
// arrives a moment later.
func (in *Intake) RetryAttribution(k Key, owner types.NamespacedName, missing bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !missing || in.attributionTries[k] >= AttributionRetries {
		if in.attributionTries[k] != 0 {
			// Write-back waits until the record this evaluation writes is
			// in (SettleAttribution), since the user may make it a hotfix.
			in.attributionTries[k] = attributionSettling
		}
		return
	}
	if in.attributionTries[k] < 0 {
		in.attributionTries[k] = 0 // a new unattributed change while settling
	}
	in.attributionTries[k]++
	in.again(k, Change{Owner: owner}, AttributionWait(in.attributionTries[k]))
}

// AwaitingAttribution reports whether an object's writer is still being
// looked for in the audit log, for a Kustomization whose policy declares
// hotfixes from it: write-back waits, since the user may yet make the
// drift a hotfix, which is never written.
func (in *Intake) AwaitingAttribution(id types.NamespacedName, k Key) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	if e == nil || e.gov.Classifier == nil || !e.gov.Classifier.AuditIntent() {
		return false
	}
	return in.attributionTries[k] != 0
}

// SettleAttribution ends an object's attribution once the evaluation that
// ended it has written the record, and tells the reconciler, so that
// write-back, which waited, looks at the record as written.
func (in *Intake) SettleAttribution(k Key, owner types.NamespacedName) {
	in.mu.Lock()
	settled := in.attributionTries[k] == attributionSettling
	if settled {
		delete(in.attributionTries, k)
	}
	in.mu.Unlock()
	if settled {
		in.opts.Notify(owner)
	}
}

// deleterRetries bounds how often a deletion waits for the audit log to
// name who deleted the object. The apiserver batches audit events (about a
// second here), so a few tries half a second apart cover the usual delay;
// after that the deletion is recorded without a user rather than kept
// from the record.
const deleterRetries = 6

// WaitForDeleter looks at a deletion again shortly while the audit log has
// not named its user, keeping the change. It reports false once the tries
// are used up: the deletion is then recorded without a user.
func (in *Intake) WaitForDeleter(k Key, c Change) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleterTries[k] >= deleterRetries {
		return false
	}
	in.deleterTries[k]++
	in.again(k, c, attributionDelay)
	return true
}

// DeleterKnown ends a deletion's wait for the audit log: the next deletion
// of the object waits afresh.
func (in *Intake) DeleterKnown(k Key) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.deleterTries, k)
}
