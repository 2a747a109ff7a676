package evaluate

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// Input is one live object to evaluate against a current render.
type Input struct {
	Snapshot reverse.Snapshot
	Live     *unstructured.Unstructured
	// Record is the object's record; nil when there is none.
	Record *refluxv1.Drift
	// Name is the record's name, whether or not it exists.
	Name string
	// Resync is true for the resync's own checks, whose dry runs are
	// throttled.
	Resync bool
	// Edits are the object as the watch saw it after the writes that
	// queued the change (intake.Change.Edits).
	Edits []*unstructured.Unstructured
}

// Result is the decision, and what the intake keeps of the evaluation.
type Result struct {
	Decision decide.Decision
	// Clean is true when the object matched the render: a resync skips it
	// until someone but Flux or reflux writes it again.
	Clean bool
	// Unattributed is true when a field's writer is not known yet: the
	// audit log delivers late, so the object is looked at again shortly.
	Unattributed bool
}

// Live compares one live object with the current render and decides.
func (e *Evaluator) Live(ctx context.Context, in Input) (Result, error) {
	snap := in.Snapshot
	ks := snap.Gov.Kustomization
	want, ok := snap.Render.Object(desired.KeyOf(in.Live))
	dIn := decide.Input{Name: in.Name, Record: in.Record, Live: LiveState(in.Live), Evaluated: true, Now: e.opts.Now()}
	if !ok {
		// Not in the applied revision (Flux prunes it, or it is encrypted):
		// nothing to compare, and a record of it is settled.
		dIn.Declared = true
		return Result{Decision: decide.Decide(dIn)}, nil
	}
	drIn := drift.Input{Desired: want, Live: in.Live, IgnorePaths: observe.IgnorePaths(ks, want), Force: ks.Spec.Force}
	var res drift.Result
	if in.Record != nil || HeldAny(in.Live) || !e.opts.Detector.Unchanged(drIn) {
		var err error
		if res, err = e.detect(ctx, snap.Gov, drIn, in.Resync); err != nil {
			// drift.ErrStale too: a newer version of the object is on its
			// way through the watch, but it may be reflux's own hold (the
			// hold lane's, taken while this worker evaluated), which the
			// watch drops as not meaningful. The caller looks again at
			// the object as its cache has it, rather than wait for an
			// event that may never come (a burst lost edits so: held, and
			// never recorded).
			return Result{}, err
		}
	}
	lostOnly := false
	if res.Skipped != "" {
		res.Fields = nil // Flux does not apply it at all
	} else if lost := e.lostEdits(in.Edits, res.Fields, want, in.Live, drIn.IgnorePaths); len(lost) > 0 {
		lostOnly = len(res.Fields) == 0
		res.Fields = withLost(res.Fields, lost)
	}
	obs := observe.Observe(observe.Input{
		Kustomization: snap.Gov.Ref(), Policy: snap.Gov.Policy.Name, Revision: snap.Revision(),
		Live: in.Live, Desired: want, Result: res, Index: snap.Render.Index, Classifier: snap.Gov.Classifier,
		Attribute: e.attributor(in.Live), Remover: e.remover(in.Live), Now: e.opts.Now(),
	})
	dIn.Observation, dIn.WantHold, dIn.HoldFor = obs.Observation, obs.Hold, obs.HoldFor
	if lostOnly {
		// Flux undid all of it before this look: nothing live to keep
		// from Flux (a hold the hold lane took meanwhile is released),
		// and the record is the evidence.
		dIn.WantHold = false
	}
	dIn.Revision = snap.Revision()
	if in.Record != nil {
		dIn.Declared = decide.Declares(want, in.Record.Spec.Fields)
		dIn.Merged = func(f refluxv1.DriftField) bool { return decide.Declares(want, []refluxv1.DriftField{f}) }
		if absent := absentFields(in.Record.Spec.Fields, obs.Observation.Fields); len(absent) > 0 {
			// Who put Git's values back matters only for the record's
			// fields that no longer drift (decide.LostToFlux, decide.Carry):
			// the managedFields are read again only then.
			dIn.FluxApplied = LastWrite(in.Live.GetManagedFields(), e.opts.Detector.FluxOwned)
			dIn.Owners, dIn.Lost = weighAbsent(e.opts.Detector, in.Live, absent, dIn.FluxApplied)
		}
	}
	return Result{Decision: decide.Decide(dIn), Clean: len(obs.Observation.Fields) == 0,
		Unattributed: e.opts.Attributor != nil && Unattributed(obs.Observation.Fields)}, nil
}

// weighAbsent reads who owns, in live, each of a record's fields the
// observation no longer finds, once per field, and returns them together
// (decide.LostToFlux weighs the record as a whole) and as decide.Carry's
// per-field test (decide.FieldLost): a field Flux's apply took off the
// live object stays on the record even when another field, changed
// later, was put back by hand. Unreadable managedFields leave the owners
// unknown, and the rule then goes by time alone; the dry run has already
// parsed them, so they are readable here unless it was skipped.
func weighAbsent(d Detector, live *unstructured.Unstructured, absent []string, fluxApplied time.Time) (decide.Owners, func(refluxv1.DriftField) bool) {
	each := make(map[string]decide.Owners, len(absent))
	var all decide.Owners
	for _, ptr := range absent {
		flux, writer, err := d.FieldOwners(live, []string{ptr})
		if err != nil {
			return decide.Owners{}, func(f refluxv1.DriftField) bool { return decide.FieldLost(f, decide.Owners{}, fluxApplied) }
		}
		each[ptr] = decide.Owners{Flux: flux, Writer: writer}
		all.Flux, all.Writer = all.Flux || flux, all.Writer || writer
	}
	return all, func(f refluxv1.DriftField) bool { return decide.FieldLost(f, each[f.Pointer], fluxApplied) }
}

// absentFields returns the pointers of a record's fields that an
// observation no longer finds.
func absentFields(recorded, found []refluxv1.DriftField) []string {
	now := make(map[string]bool, len(found))
	for _, f := range found {
		now[f.Pointer] = true
	}
	var out []string
	for _, f := range recorded {
		if !now[f.Pointer] {
			out = append(out, f.Pointer)
		}
	}
	return out
}

// LastWrite is the time of the latest managedFields entry of a manager
// that of selects; zero when there is none.
func LastWrite(entries []metav1.ManagedFieldsEntry, of func(manager string) bool) time.Time {
	var last time.Time
	for _, e := range entries {
		if e.Time != nil && of(e.Manager) && e.Time.After(last) {
			last = e.Time.Time
		}
	}
	return last
}

// detect makes the dry run, as the Kustomization's identity; a resync's
// waits for the limiter.
func (e *Evaluator) detect(ctx context.Context, g *reverse.Governed, in drift.Input, resync bool) (drift.Result, error) {
	if resync {
		if err := e.limiter.Wait(ctx); err != nil {
			return drift.Result{}, err
		}
	}
	det, err := e.detectorFor(g)
	if err != nil {
		return drift.Result{}, err
	}
	res, err := det.Detect(ctx, in)
	if err != nil {
		if errors.Is(err, drift.ErrStale) {
			return res, err
		}
		return res, fmt.Errorf("detecting drift: %w", err)
	}
	if e.opts.Metrics != nil {
		e.opts.Metrics.ObserveDryRun(resync)
	}
	return res, nil
}

func (e *Evaluator) attributor(live *unstructured.Unstructured) observe.Attributor {
	if e.opts.Attributor == nil {
		return nil
	}
	return func(manager string, at time.Time) observe.Who { return e.opts.Attributor.User(live, manager, at) }
}

// remover names who removed a field of live from the audit log, leaving
// out the writes that are never drift: Flux's, reflux's own holds and
// the allowed managers'.
func (e *Evaluator) remover(live *unstructured.Unstructured) observe.Remover {
	if e.opts.Attributor == nil {
		return nil
	}
	return func(at time.Time) *refluxv1.Modifier {
		w, ok := e.opts.Attributor.Writer(live, at, e.benign)
		if !ok {
			return nil
		}
		when := metav1.NewTime(w.Time)
		return &refluxv1.Modifier{Manager: w.Manager, Operation: "Update", User: w.User,
			Groups: append([]string(nil), w.Groups...), Time: &when}
	}
}

// Unattributed reports whether some field still lacks its user: a writer
// managedFields name but the audit log has not, or a removed field, which
// only the audit log can name. It may deliver late.
func Unattributed(fields []refluxv1.DriftField) bool {
	for _, f := range fields {
		if f.Modifier != nil && f.Modifier.User == "" {
			return true
		}
		if f.Modifier == nil && f.ChangeType == refluxv1.ChangeRemove && f.Pointer != refluxv1.WholeObjectPointer {
			return true
		}
	}
	return false
}

// LiveState is what the decision needs of a live object: whether it
// carries a hold, and whose.
func LiveState(u *unstructured.Unstructured) decide.Live {
	by, held := refluxv1.HeldBy(u.GetAnnotations())
	return decide.Live{Exists: true, Held: held, HeldBy: by}
}

// Held reports whether the object carries the hold of record name.
func Held(u *unstructured.Unstructured, name string) bool {
	l := LiveState(u)
	return l.Held && l.HeldBy == name
}

// HeldAny reports whether the object carries any reflux hold.
func HeldAny(u *unstructured.Unstructured) bool {
	return LiveState(u).Held
}
