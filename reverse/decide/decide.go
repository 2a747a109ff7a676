package decide

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Action is what happens to the record.
type Action string

const (
	// Keep leaves the record as it is.
	Keep Action = ""
	// Create writes a new record.
	Create Action = "Create"
	// Update rewrites an open record's spec or status.
	Update Action = "Update"
	// Reopen resets a closed record for a new drift.
	Reopen Action = "Reopen"
	// Resolve closes a record whose drift Git now declares.
	Resolve Action = "Resolve"
	// Dismiss closes a record a user or reviewer rejected.
	Dismiss Action = "Dismiss"
	// Finalize lets a deleted, dismissed record go.
	Finalize Action = "Finalize"
	// SetStatus writes a write-back transition to the record's status.
	SetStatus Action = "SetStatus"
	// Expire marks a hold past its maximum age on the record, and with a
	// Release closes the record as Expired.
	Expire Action = "Expire"
)

// HoldAction is what happens to the live object's hold.
type HoldAction string

const (
	// HoldNone leaves the hold as it is.
	HoldNone HoldAction = ""
	// Hold annotates the object so Flux leaves it alone.
	Hold HoldAction = "Hold"
	// Release removes reflux's hold.
	Release HoldAction = "Release"
)

// Live is what the decision needs of the live object.
type Live struct {
	// Exists is false when the object is gone.
	Exists bool
	// Held is true when it carries a hold (refluxv1.HeldBy).
	Held bool
	// HeldBy is the record the hold names.
	HeldBy string
}

// Input is everything known of one live object.
type Input struct {
	// Name is the object's record name (record.Name), whether or not the
	// record exists: a hold taken before evaluation names it too.
	Name string
	// Record is the existing record; nil when there is none.
	Record *refluxv1.Drift
	// Live describes the live object.
	Live Live
	// Evaluated is true when the object was compared with the applied
	// revision; Observation and WantHold are meaningful only then.
	Evaluated bool
	// Observation is what the comparison found (no fields: no drift).
	Observation record.Observation
	// WantHold is true when a field asks to be held.
	WantHold bool
	// HoldFor bounds the hold WantHold asks for; 0 is no limit. The
	// record's status.holdExpiresAt is its heldSince plus HoldFor.
	HoldFor time.Duration
	// Declared is true when the applied revision declares every value the
	// record saw live, or no longer renders the object: the drift is
	// settled in Git. See Declares.
	Declared bool
	// FluxApplied is when Flux's field owner last wrote the live object,
	// from its managedFields (one-second resolution); zero when it never
	// did or is not known. See LostToFlux.
	FluxApplied time.Time
	// Upgrade names the HelmRelease (namespace/name) of a record of a Helm
	// release's object: only its upgrade applies over a hold, the whole
	// chart, hold or not. Empty for a Kustomization's object.
	Upgrade string
	// Owners says who owns the record's fields live now, from
	// managedFields (drift.FieldOwners). See LostToFlux. It and
	// FluxApplied are read only when some of the record's fields no longer
	// drift, and are about those.
	Owners Owners
	// Merged says whether the applied revision declares the value a field
	// of the record saw live (Declares, field by field); nil when none
	// does. See Carry.
	Merged func(refluxv1.DriftField) bool
	// Lost says whether Flux's apply took a field of the record off the
	// live object (FieldLost); nil when none is known to. See Carry.
	Lost func(refluxv1.DriftField) bool
	// Revision is the applied revision the object was evaluated against,
	// for how a record closes; "" when not evaluated.
	Revision string
	// Now is the decision's time.
	Now time.Time
}

// Decision is what the executor does for one object.
type Decision struct {
	Action Action
	// Record is the record to write for Create, Update, Reopen and
	// SetStatus, spec and status as they should be; for Resolve and Dismiss
	// the record to close.
	Record *refluxv1.Drift
	// WriteSpec and WriteStatus say which parts of Record changed.
	WriteSpec, WriteStatus bool
	// Hold and HeldSince say what happens to the live object's hold.
	Hold      HoldAction
	HeldSince time.Time
	// Changed is true when the recorded drift is new or changed: worth an
	// event and a detection.
	Changed bool
	// HotfixMarked is true when this decision first marks the object a
	// manual hotfix: a new or reopened record that carries the annotation,
	// or an open record that did not. A resync or a restart finds the
	// record already marked, so each use of the break-glass annotation is
	// counted once.
	HotfixMarked bool
	// RequestReconcile asks Flux to reconcile now, so that a dismissed
	// drift's Git value comes back without waiting an interval.
	RequestReconcile bool
	// Mark is the manual-hotfix annotation to add to the live object: the
	// audit log declared the hotfix and the object lacks it.
	Mark map[string]string
	// Unmark lists the annotations reflux added for an audit-derived
	// hotfix, to remove from the live object as the record closes.
	Unmark []string
	// Expired is true when this decision first finds the hold past its
	// maximum age: worth a Warning event marked for paging.
	Expired bool
	// Closed says how a Resolve or Dismiss closes the record. The engine
	// adds who closed it (By) where the audit log or managedFields say.
	Closed *refluxv1.DriftClosure
	// Lost is set when the decision finds the live change undone over its
	// hold (LostLiveCondition): the executor raises the Warning event.
	Lost bool
	// Why explains the decision, for logs and tests.
	Why string
}

// LastSeenResolution bounds how often a record is rewritten only to move
// its last-seen time: confirming the same drift is not worth a write each
// time. The resync confirms every open record at its Kustomization's
// interval, so a resolution shorter than that interval rewrites every
// record at every resync: the soak's drain, with no edit left, made some
// 2,000 such writes a minute at a resolution of one minute, against a
// Flux interval of one minute. An hour keeps lastSeen an honest "still
// there" at a write per record per hour.
const LastSeenResolution = time.Hour

// Decide decides for one object.
func Decide(in Input) Decision {
	return finishOwed(in.Record, decideObject(in))
}

// finishOwed turns a release that finishes the owed release of a closed
// record (OwesRelease) into Expire, so the executor writes that it
// happened, as the expiry timers' retry does; otherwise the record would
// say its release is owed until they fire.
func finishOwed(rec *refluxv1.Drift, d Decision) Decision {
	if d.Action != Keep || d.Hold != Release || !OwesRelease(rec) {
		return d
	}
	d.Action, d.Record = Expire, rec.DeepCopy()
	return d
}

func decideObject(in Input) Decision {
	rec := in.Record
	heldByUs := in.Live.Held && in.Live.HeldBy == in.Name
	if rec != nil && DismissRequested(rec) && rec.Status.State != refluxv1.DriftDismissed {
		d := Decision{Action: Dismiss, Record: rec, RequestReconcile: in.Live.Exists, Unmark: Marked(rec), Why: "dismissal requested",
			Closed: Dismissal(rec, in.Now)}
		if heldByUs || rec.Status.HeldSince != nil {
			d.Hold = Release
		}
		return d
	}
	if !in.Live.Exists {
		if in.Evaluated && len(in.Observation.Fields) > 0 {
			// Deleted while the applied revision declares it: drift of the
			// whole object, and nothing left to hold.
			in.WantHold = false
			return drifted(in, false, false)
		}
		if rec != nil && !rec.DeletionTimestamp.IsZero() && rec.Status.State == refluxv1.DriftDismissed {
			return Decision{Action: Finalize, Record: rec, Why: "the object is gone"}
		}
		if rec != nil && record.IsOpen(rec) && rec.Status.State == refluxv1.DriftPending && !PendingDeletion(rec) {
			// Flux pruned it, or its deletion is recorded apart: the change
			// written to it is moot. A deletion written down as Pending is
			// what this is: only its render can close it (a prune), as
			// the governor's deletion path does.
			return Decision{Action: Resolve, Record: rec, Why: "pending, and the object is gone",
				Closed: Closure(refluxv1.ClosedNoDriftReason, "the object is gone: nothing of the change is left to evaluate", "", in.Now)}
		}
		return Decision{Why: "the object is gone"}
	}
	// A closed record whose hold is still in place: an earlier release
	// failed, finish it whatever else is decided.
	finish := rec != nil && !record.IsOpen(rec) && heldByUs
	if !in.Evaluated {
		return finishRelease(in, Decision{Why: "not evaluated against the applied revision"}, finish)
	}
	never := func(refluxv1.DriftField) bool { return false }
	merged, lost := in.Merged, in.Lost
	if merged == nil {
		merged = never
	}
	if lost == nil {
		lost = never
	}
	carried := Carry(rec, in.Observation, merged, lost)
	in.Observation = carried.Observation
	if len(in.Observation.Fields) == 0 {
		return settle(in, heldByUs, finish)
	}
	if len(carried.Fields) > 0 {
		// In pointer order, as the comparison gives them: the record's
		// spec must come out the same when nothing changed, or every look
		// would rewrite it.
		fields := append(append([]refluxv1.DriftField(nil), in.Observation.Fields...), carried.Fields...)
		sort.SliceStable(fields, func(i, j int) bool { return fields[i].Pointer < fields[j].Pointer })
		in.Observation.Fields = fields
	}
	d := drifted(in, heldByUs, finish)
	if carried.Lost && d.Record != nil && !apimeta.IsStatusConditionTrue(d.Record.Status.Conditions, refluxv1.LostLiveCondition) {
		// Held again for a newer field, the record still keeps evidence
		// of a change Flux undid: it says so as long as it does, which
		// also keeps carrying that evidence.
		c := metav1.Condition{Type: refluxv1.LostLiveCondition, Status: metav1.ConditionTrue, Reason: refluxv1.OverwrittenByFluxReason,
			Message:            "Flux's apply put Git's values back over part of the change: that part is lost live and kept as evidence",
			ObservedGeneration: d.Record.Generation, LastTransitionTime: metav1.NewTime(in.Now)}
		if was := apimeta.FindStatusCondition(rec.Status.Conditions, refluxv1.LostLiveCondition); was != nil {
			c = *was
		}
		apimeta.SetStatusCondition(&d.Record.Status.Conditions, c)
		d.WriteStatus = !equality.Semantic.DeepEqual(rec.Status, d.Record.Status)
		switch {
		case d.WriteStatus && d.Action == Keep:
			d.Action = Update
		case !d.WriteStatus && !d.WriteSpec && d.Hold == HoldNone && d.Action == Update:
			d.Action = Keep
		}
	}
	return d
}

// finishRelease finishes the release of a closed record whose earlier
// release failed. A record dismissed, or released as its hold expired,
// was closed so that Flux restores Git: the release asks Flux to
// reconcile again, as the first attempt would have once released.
func finishRelease(in Input, d Decision, finish bool) Decision {
	if !finish {
		return d
	}
	d.Hold = Release
	switch in.Record.Status.State {
	case refluxv1.DriftDismissed, refluxv1.DriftExpired:
		d.RequestReconcile = in.Live.Exists
	}
	return d
}

func withRelease(d Decision, release bool) Decision {
	if release {
		d.Hold = Release
	}
	return d
}

// settle decides for an object that no longer drifts. A record is resolved
// only when the applied revision declares what it saw live (the change was
// merged); Flux reverting an unheld record's drift leaves the evidence
// open for review.
func settle(in Input, heldByUs, finish bool) Decision {
	rec := in.Record
	switch {
	case rec == nil:
		return withRelease(Decision{Why: "no drift; a hold taken before evaluation is released"}, heldByUs)
	case !rec.DeletionTimestamp.IsZero() && rec.Status.State == refluxv1.DriftDismissed:
		return withRelease(Decision{Action: Finalize, Record: rec, Why: "Flux restored Git's value"}, finish)
	case !record.IsOpen(rec):
		return withRelease(Decision{Why: "closed, and nothing drifts"}, finish)
	case rec.Status.State == refluxv1.DriftPending:
		// Its change was Git's value all along, or was undone before a
		// render could say: nothing to review, but what was written stays
		// on the closed record.
		return withRelease(Decision{Action: Resolve, Record: rec, Why: "pending, and the render finds no drift",
			Closed: Closure(refluxv1.ClosedNoDriftReason, "the render of the applied revision finds nothing that diverges from Git",
				in.Revision, in.Now)}, heldByUs || rec.Status.HeldSince != nil)
	case in.Declared:
		// A hotfix reflux marked from the audit log loses the mark when Git
		// takes its value, or the object's next edit would count as one too.
		// A held object may lack part of what was merged (evidence Flux
		// had undone, Carry): Flux skipped it while held, so it is asked
		// to apply again as the hold goes.
		release := heldByUs || rec.Status.HeldSince != nil
		return withRelease(Decision{Action: Resolve, Record: rec, Unmark: Marked(rec), Why: "the applied revision declares the live value",
			Closed:           Closure(refluxv1.ClosedMergedReason, "the applied revision declares the live value", in.Revision, in.Now),
			RequestReconcile: release && in.Live.Exists && carriesLost(rec)}, release)
	case heldByUs && LostToFlux(rec, in.Owners, in.FluxApplied):
		return lostToFlux(in)
	case heldByUs:
		// Held, so Flux did not revert it: a person or another tool put
		// Git's values back. Nothing is left to propose (issue 17 §2).
		return withRelease(Decision{Action: Resolve, Record: rec, Unmark: Marked(rec), Why: "the live object matches the applied revision again",
			Closed: Closure(refluxv1.ClosedRevertedReason, "the live object came back to the applied revision's values while held",
				in.Revision, in.Now)}, true)
	case in.Owners.Writer && !in.Owners.Flux && !deletesObject(rec):
		// Unheld, but Flux did not put Git's values back: a writer who
		// owns the fields did, as a person does where Flux never reverts
		// (helm-controller's warn mode). Nothing is left to propose.
		return Decision{Action: Resolve, Record: rec, Unmark: Marked(rec), Why: "the live object matches the applied revision again",
			Closed: Closure(refluxv1.ClosedRevertedReason, "the live object came back to the applied revision's values",
				in.Revision, in.Now)}
	}
	// Unheld, so Flux may have reverted it: the evidence stays open for
	// review.
	return Decision{Why: "no drift live, but Git does not declare what was seen: kept as evidence"}
}

// deletesObject reports whether rec records the object's deletion: its
// recreation is Flux's, whoever owns the fields after.
func deletesObject(rec *refluxv1.Drift) bool {
	for _, f := range rec.Spec.Fields {
		if f.DeletesObject() {
			return true
		}
	}
	return false
}

// Owners says who owns a record's fields in the live object: Flux's own
// apply, a writer whose writes can be drift (a person, a tool), both or
// neither (the fields are gone live, or only allow-listed managers own
// them).
type Owners struct {
	Flux, Writer bool
}

// LostToFlux reports whether Flux's apply undid a held record's live
// change. The hold keeps Flux out only from the moment it lands; an apply
// Flux had already started (it read the object before the hold, and
// applies with force) still puts Git's values back. Nobody reverted the
// change by choice, so it must not be closed as Reverted.
//
// Who owns the fields tells first: a person who puts Git's values back
// keeps the fields, while Flux's forced apply takes them. Only when
// neither owns them (the change added fields, and they are gone) does
// time tell: Flux wrote the object at or after the change was made.
// managedFields times have one-second resolution: a write by Flux in the
// same second as the change counts as after it, so that an ambiguous case
// keeps the evidence.
func LostToFlux(rec *refluxv1.Drift, owners Owners, fluxApplied time.Time) bool {
	changed := rec.Spec.FirstSeen.Time
	if m := rec.Spec.LastModifier; m != nil && m.Time != nil {
		changed = m.Time.Time
	}
	return undoneByFlux(owners, fluxApplied, changed)
}

// undoneByFlux is LostToFlux's rule for a change made at changed.
func undoneByFlux(owners Owners, fluxApplied, changed time.Time) bool {
	switch {
	case owners.Writer:
		return false
	case owners.Flux:
		return true
	case fluxApplied.IsZero(), changed.IsZero():
		return false
	}
	return !fluxApplied.Before(changed.Truncate(time.Second))
}

// lostToFlux keeps a held record open whose live change Flux's apply
// undid: the change is gone from the cluster, so the record is the only
// evidence of it and its proposal stands. The hold is released, as it
// protects nothing now and would keep Flux from applying the merged
// proposal.
//
// The record says so (LostLiveCondition), and the executor raises a
// Warning event: the change is gone from the cluster by no one's
// decision, which is what someone must hear of.
func lostToFlux(in Input) Decision {
	next := in.Record.DeepCopy()
	next.Status = status(next, false, time.Time{})
	next.Status.HoldExpiresAt, next.Status.Conditions = expiresAt(next.Status, false, 0)
	reason := refluxv1.OverwrittenByFluxReason
	why := "Flux's apply, already under way as the hold was taken, put Git's values back: the change is lost live and kept as evidence"
	if in.Upgrade != "" {
		reason = refluxv1.OverwrittenByUpgradeReason
		why = fmt.Sprintf("helm-controller's upgrade of HelmRelease %s applied the chart over the hold: the change is lost live and kept as evidence", in.Upgrade)
	}
	apimeta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: refluxv1.LostLiveCondition,
		Status: metav1.ConditionTrue, Reason: reason, Message: why, ObservedGeneration: next.Generation,
		LastTransitionTime: metav1.NewTime(in.Now)})
	return Decision{Action: Update, Record: next, Hold: Release, Lost: true,
		WriteStatus: !equality.Semantic.DeepEqual(in.Record.Status, next.Status), Why: why}
}

// Closure is how a record closes, for its status.closed.
func Closure(reason, message, revision string, now time.Time) *refluxv1.DriftClosure {
	return &refluxv1.DriftClosure{Reason: reason, Message: message, Revision: revision, Time: metav1.NewTime(now)}
}

// Dismissal is how a user's dismissal closes a record: by annotation, or
// by deleting the record.
func Dismissal(rec *refluxv1.Drift, now time.Time) *refluxv1.DriftClosure {
	if !rec.DeletionTimestamp.IsZero() {
		return Closure(refluxv1.ClosedRecordDeletedReason, "the record was deleted", "", now)
	}
	return Closure(refluxv1.ClosedDismissedReason, "the record was annotated "+refluxv1.DismissAnnotation+"=true", "", now)
}

// drifted decides for an object that drifts now.
func drifted(in Input, heldByUs, finish bool) Decision {
	rec, obs := in.Record, in.Observation
	action := Update
	if rec == nil {
		action = Create
	} else if !record.IsOpen(rec) {
		if !rec.DeletionTimestamp.IsZero() || closedFingerprint(rec) == record.Fingerprint(record.Merge(nil, obs)) {
			return finishRelease(in, Decision{Why: "the closed drift persists while Flux restores Git"}, finish)
		}
		if closedPending(rec) && sawWrite(rec, obs.LastModifier(), liveValues(obs.Fields)) {
			// Closed before a render said what it was: no fingerprint to
			// compare, but nobody wrote since, so it is the same change.
			return finishRelease(in, Decision{Why: "the change closed while pending persists while Flux restores Git"}, finish)
		}
		rec, action = reopened(rec, in.Now), Reopen
	}
	heldSince := in.Now
	if rec != nil && rec.Status.HeldSince != nil {
		heldSince = rec.Status.HeldSince.Time
	}
	next := record.Merge(rec, obs)
	if by := next.Spec.ManualHotfixBy; by != nil && next.Spec.ManualHotfix {
		// The record says which annotation reflux adds, so that it can
		// take it off again as the record closes.
		for k := range obs.Mark {
			by.MarkedKey = k
		}
	}
	if rec != nil && next.Spec.LastSeen.Sub(rec.Spec.LastSeen.Time) < LastSeenResolution {
		next.Spec.LastSeen = rec.Spec.LastSeen
	}
	next.Status = status(next, in.WantHold, heldSince)
	next.Status.HoldExpiresAt, next.Status.Conditions = expiresAt(next.Status, in.WantHold, in.HoldFor)
	d := Decision{Action: action, Record: next, HeldSince: heldSince, Why: "drift"}
	d.WriteSpec = rec == nil || action == Reopen ||
		!equality.Semantic.DeepEqual(rec.Spec, next.Spec) || !equality.Semantic.DeepEqual(rec.Labels, next.Labels)
	d.WriteStatus = rec == nil || action == Reopen || !equality.Semantic.DeepEqual(rec.Status, next.Status)
	d.Changed = rec == nil || action == Reopen || !sameDrift(rec.Spec.Fields, next.Spec.Fields)
	d.HotfixMarked = next.Spec.ManualHotfix && (rec == nil || action == Reopen || !rec.Spec.ManualHotfix)
	if next.Spec.ManualHotfix && len(obs.Mark) > 0 {
		d.Mark = obs.Mark
	}
	switch {
	case in.WantHold && !in.Live.Held:
		d.Hold = Hold
	case !in.WantHold && heldByUs:
		// Held before evaluation (or by an earlier drift), and no field
		// asks for it now: Flux may revert, the record keeps the evidence.
		d.Hold = Release
	}
	if !d.WriteSpec && !d.WriteStatus && d.Hold == HoldNone {
		d.Action = Keep
	}
	return d
}

// status is the record's status for its current fields: its summary, its
// fingerprint and its state. A branch that already carries exactly this
// drift keeps the record Proposed.
func status(next *refluxv1.Drift, hold bool, heldSince time.Time) refluxv1.DriftStatus {
	s := *next.Status.DeepCopy()
	s.Action, s.Severity = record.Status(next)
	fp := record.Fingerprint(next)
	proposed := s.State == refluxv1.DriftProposed && s.Fingerprint == fp
	s.Fingerprint = fp
	switch {
	case proposed && !hold:
		s.HeldSince = nil
	case proposed:
	case hold:
		s.State = refluxv1.DriftHeld
		since := metav1.NewTime(heldSince)
		s.HeldSince = &since
	default:
		s.State = refluxv1.DriftDetected
		s.HeldSince = nil
	}
	if hold && s.HeldSince == nil {
		since := metav1.NewTime(heldSince)
		s.HeldSince = &since
	}
	if hold {
		// Held again: the change is live, no longer lost.
		apimeta.RemoveStatusCondition(&s.Conditions, refluxv1.LostLiveCondition)
		if len(s.Conditions) == 0 {
			s.Conditions = nil
		}
	}
	return s
}

// closedFingerprint is what a closed record's drift was: the fingerprint
// its status recorded or, when it closed before its first status write
// (a dismissal between its create and that write, whose retry then
// closes it), that of the fields it holds. An empty one matched no drift,
// so the same drift seen again reopened the record, without its
// dismissal, and proposed it (TestDismissedMergeRecordIsNeverProposed
// failed so, under load).
func closedFingerprint(rec *refluxv1.Drift) string {
	if rec.Status.Fingerprint != "" || len(rec.Spec.Fields) == 0 {
		return rec.Status.Fingerprint
	}
	return record.Fingerprint(rec)
}

// closedPending reports whether rec closed while Pending: it names what
// was written, and never what diverged.
func closedPending(rec *refluxv1.Drift) bool {
	return rec.Status.Closed != nil && len(rec.Spec.Fields) == 0 && len(rec.Spec.Written) > 0
}

// liveValues indexes drifted fields' live values by pointer.
func liveValues(fields []refluxv1.DriftField) map[string]string {
	out := make(map[string]string, len(fields))
	for _, f := range fields {
		out[f.Pointer] = f.LiveValue
	}
	return out
}

// reopened resets a closed record for a new drift on the same object: the
// dismissal, the branch and the first-seen times belong to the old one.
func reopened(closed *refluxv1.Drift, now time.Time) *refluxv1.Drift {
	d := closed.DeepCopy()
	delete(d.Annotations, refluxv1.DismissAnnotation)
	d.Spec.Fields, d.Spec.Written = nil, nil
	d.Spec.FirstSeen = metav1.NewTime(now)
	d.Status = refluxv1.DriftStatus{}
	return d
}

// sameDrift compares what two field lists say diverges, ignoring the
// bookkeeping (first-seen times, modifiers) that changes on every look.
func sameDrift(a, b []refluxv1.DriftField) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Pointer != b[i].Pointer || a[i].ChangeType != b[i].ChangeType || a[i].LiveValue != b[i].LiveValue ||
			a[i].GitValue != b[i].GitValue || a[i].Action != b[i].Action || a[i].Severity != b[i].Severity {
			return false
		}
	}
	return true
}

// DismissRequested reports whether a user dismissed the record, by
// annotation or by deleting it.
func DismissRequested(d *refluxv1.Drift) bool {
	return d.Annotations[refluxv1.DismissAnnotation] == "true" || !d.DeletionTimestamp.IsZero()
}

// Marked lists the annotations reflux added to the live object for a
// record's audit-derived hotfix.
func Marked(rec *refluxv1.Drift) []string {
	if by := rec.Spec.ManualHotfixBy; by != nil && by.MarkedKey != "" {
		return []string{by.MarkedKey}
	}
	return nil
}
