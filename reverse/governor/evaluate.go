package governor

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/record"
)

// handle brings one object's record and hold up to date with what is
// known of it. resync is true for the resync's own checks, which are
// throttled and skip objects known clean.
func (gv *Governor) handle(ctx context.Context, k objKey, c change, resync bool) error {
	if c.audited != nil {
		// A Secret reflux does not watch (--secrets=metadata): what the
		// audit log says is all there is to decide on.
		_, err := gv.auditedSecret(ctx, k, c)
		return err
	}
	live, ok := gv.opts.Live.Get(k.GVK, k.Namespace, k.Name)
	if c.deleted != nil && (!ok || live.GetUID() != c.deleted.GetUID()) {
		// Deleted, and perhaps recreated by Flux since: the deletion is
		// decided first, then whatever is live now. A deletion kept for
		// later (parked, or waiting for the audit log) comes back with the
		// whole change.
		if kept, err := gv.deletion(ctx, k, c); err != nil || kept {
			return err
		}
		c.deleted = nil
	}
	if !ok {
		return gv.gone(ctx, k, c)
	}
	owner := ownerOf(live)
	snap, governed := gv.snapshotOf(owner)
	obj := objectRef(k.GVK, live)
	ks := refluxv1.KustomizationRef{Namespace: owner.Namespace, Name: owner.Name}
	name := record.Name(ks, obj)
	p := plan{name: name, namespace: owner.Namespace, obj: obj, seen: c.seen}
	if governed {
		p.ks, p.as = snap.gov.Kustomization, snap.gov.Identity
	} else if ok, err := gv.inShard(ctx, owner); err != nil || !ok {
		return err // another shard's, or unknown for now
	}
	err := gv.exec.withRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		if !governed {
			// Not (or no longer) governed: only what a user asked of a
			// record is done, a dismissal and letting a record go.
			return decide.Decide(decide.Input{Name: name, Record: rec, Live: liveState(live), Now: gv.now()}), nil
		}
		if rec == nil && !held(live, name) {
			if c.benign && !gv.isParked(owner, k) {
				// Flux applying, reflux holding or the control plane:
				// never drift, and a clean object stays clean.
				gv.markClean(owner, k, c.from, live.GetResourceVersion())
				return decide.Decision{Why: "written by Flux, reflux or the control plane"}, nil
			}
			if resync && gv.isClean(owner, k, live.GetResourceVersion()) {
				return decide.Decision{Why: "clean since the last check"}, nil
			}
		}
		if !snap.current {
			d, current := gv.wait(owner, k, c, live, rec, name, snap.gov.mayHold())
			if !current {
				return d, nil
			}
			// The render became current meanwhile: evaluate after all.
			if snap, governed = gv.snapshotOf(owner); !governed {
				return decide.Decision{Why: "no longer governed"}, nil
			}
		}
		if resync && p.seen.IsZero() {
			// Read under the record's lock: a live worker that took the
			// change waits on it, so the resync is first to record it.
			p.seen = gv.sighting(owner, k)
		}
		return gv.evaluate(ctx, snap, k, live, rec, name, resync)
	})
	if err == nil {
		gv.settleAttribution(k, owner)
	}
	return err
}

// wait parks a change until the render is current, and holds the object
// meanwhile when Flux would revert the change and the policy lets it
// (mayHold). A dismissal is carried out at once: it needs no render. It
// reports whether the render became current meanwhile, in which case
// nothing was parked.
func (gv *Governor) wait(owner types.NamespacedName, k objKey, c change, live *unstructured.Unstructured,
	rec *refluxv1.Drift, name string, mayHold bool) (decide.Decision, bool) {
	if rec != nil && decide.DismissRequested(rec) {
		return decide.Decide(decide.Input{Name: name, Record: rec, Live: liveState(live), Now: gv.now()}), false
	}
	hold := mayHold && c.reverted && !heldAny(live)
	c.held = c.held || hold || held(live, name)
	if gv.park(owner, k, c) {
		return decide.Decision{}, true
	}
	if !hold {
		return decide.Decision{Why: "kept until the render is current"}, false
	}
	return decide.Decision{Hold: decide.Hold, HeldSince: gv.now(),
		Why: "held until the render is current: Flux would revert the change"}, false
}

// evaluate compares one object with the current render and decides.
func (gv *Governor) evaluate(ctx context.Context, snap snapshot, k objKey, live *unstructured.Unstructured,
	rec *refluxv1.Drift, name string, resync bool) (decide.Decision, error) {
	ks := snap.gov.Kustomization
	owner := snap.gov.Key()
	want, ok := snap.render.Object(desired.KeyOf(live))
	in := decide.Input{Name: name, Record: rec, Live: liveState(live), Evaluated: true, Now: gv.now()}
	if !ok {
		// Not in the applied revision (Flux prunes it, or it is encrypted):
		// nothing to compare, and a record of it is settled.
		in.Declared = true
		return decide.Decide(in), nil
	}
	dIn := drift.Input{Desired: want, Live: live, IgnorePaths: observe.IgnorePaths(ks, want), Force: ks.Spec.Force}
	var res drift.Result
	if rec != nil || heldAny(live) || !gv.opts.Detector.Unchanged(dIn) {
		if resync {
			if err := gv.limiter.Wait(ctx); err != nil {
				return decide.Decision{}, err
			}
		}
		det, err := gv.detectorFor(snap.gov)
		if err != nil {
			return decide.Decision{}, err
		}
		res, err = det.Detect(ctx, dIn)
		if errors.Is(err, drift.ErrStale) {
			// A newer version of the object is on its way through the watch.
			return decide.Decision{Why: "stale"}, nil
		}
		if err != nil {
			return decide.Decision{}, fmt.Errorf("detecting drift: %w", err)
		}
		gv.opts.Metrics.observeDryRun(resync)
	}
	if res.Skipped != "" {
		res.Fields = nil // Flux does not apply it at all
	}
	obs := observe.Observe(observe.Input{
		Kustomization: snap.gov.ref(), Policy: snap.gov.Policy.Name, Revision: snap.render.Revision,
		Live: live, Desired: want, Result: res, Index: snap.render.Index, Classifier: snap.gov.Classifier,
		Attribute: gv.attributor(live), Remover: gv.remover(live), Now: gv.now(),
	})
	in.Observation, in.WantHold, in.HoldFor = obs.Observation, obs.Hold, obs.HoldFor
	in.Revision = snap.render.Revision
	if rec != nil {
		in.Declared = decide.Declares(want, rec.Spec.Fields)
	}
	d := decide.Decide(in)
	if len(obs.Observation.Fields) == 0 {
		gv.markClean(owner, k, "", live.GetResourceVersion())
	} else {
		gv.forgetClean(owner, k)
	}
	// Also with no fields: an attribution that was pending ends here, or
	// its entry would hold write-back back (awaitingAttribution).
	gv.retryAttribution(k, owner, obs.Observation.Fields)
	return d, nil
}

// gone handles an object that is no longer live: a deleted record of it
// may go.
func (gv *Governor) gone(ctx context.Context, k objKey, c change) error {
	if c.owner.Name == "" {
		return nil
	}
	ks := refluxv1.KustomizationRef{Namespace: c.owner.Namespace, Name: c.owner.Name}
	name := record.Name(ks, c.obj)
	p := plan{name: name, namespace: c.owner.Namespace, obj: c.obj}
	e := gv.forgetGone(c.owner, k)
	if e != nil {
		p.ks, p.as = e.gov.Kustomization, e.gov.Identity
	}
	if e == nil {
		if ok, err := gv.inShard(ctx, c.owner); err != nil || !ok {
			return err
		}
	}
	return gv.exec.withRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		return decide.Decide(decide.Input{Name: name, Record: rec, Live: decide.Live{}, Now: gv.now()}), nil
	})
}

// forgetGone drops what is kept of a live object that is gone, and
// returns its owner's entry, if governed. A parked audited change stays:
// it came from the audit log, not from the live object, and a Secret
// reflux does not watch (--secrets=metadata) is never in the live store,
// so a resync of it always finds it "gone".
func (gv *Governor) forgetGone(owner types.NamespacedName, k objKey) *entry {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	delete(gv.attributionTries, k) // nothing left to attribute
	e := gv.entries[owner]
	if e == nil {
		return nil
	}
	if pc, ok := e.parked[k]; ok && pc.audited == nil {
		delete(e.parked, k)
	}
	delete(e.clean, k)
	return e
}

func (gv *Governor) attributor(live *unstructured.Unstructured) observe.Attributor {
	if gv.opts.Attributor == nil {
		return nil
	}
	return func(manager string, at time.Time) observe.Who { return gv.opts.Attributor.User(live, manager, at) }
}

// remover names who removed a field of live from the audit log, leaving
// out the writes that are never drift: Flux's, reflux's own holds and
// the allowed managers'.
func (gv *Governor) remover(live *unstructured.Unstructured) observe.Remover {
	if gv.opts.Attributor == nil {
		return nil
	}
	benign := func(manager string) bool {
		return manager == refluxv1.FieldManager || gv.opts.Detector.Allowed(manager)
	}
	return func(at time.Time) *refluxv1.Modifier {
		w, ok := gv.opts.Attributor.Writer(live, at, benign)
		if !ok {
			return nil
		}
		when := metav1.NewTime(w.Time)
		return &refluxv1.Modifier{Manager: w.Manager, Operation: "Update", User: w.User,
			Groups: append([]string(nil), w.Groups...), Time: &when}
	}
}

// attributionRetries bounds how often an object is looked at again for a
// user the audit log has not delivered yet.
const attributionRetries = 10

// attributionSettling marks an object whose attribution is over (found, or
// given up) while the evaluation that saw it is still writing the record.
const attributionSettling = -1

// retryAttribution looks at an object again shortly when some field has no
// user yet: the record is written within milliseconds of the change, and
// the apiserver batches audit events, so the user often arrives a moment
// later.
func (gv *Governor) retryAttribution(k objKey, owner types.NamespacedName, fields []refluxv1.DriftField) {
	if gv.opts.Attributor == nil {
		return
	}
	missing := false
	for _, f := range fields {
		if f.Modifier != nil && f.Modifier.User == "" || unattributedRemoval(f) {
			missing = true
		}
	}
	gv.mu.Lock()
	defer gv.mu.Unlock()
	if !missing || gv.attributionTries[k] >= attributionRetries {
		if gv.attributionTries[k] != 0 {
			// Write-back waits until the record this evaluation writes is
			// in (settleAttribution), since the user may make it a hotfix.
			gv.attributionTries[k] = attributionSettling
		}
		return
	}
	if gv.attributionTries[k] < 0 {
		gv.attributionTries[k] = 0 // a new unattributed change while settling
	}
	gv.attributionTries[k]++
	gv.pending[k] = change{owner: owner}.merge(gv.pending[k])
	gv.live.AddAfter(k, 500*time.Millisecond)
}

// unattributedRemoval reports whether a removed field still lacks its
// writer: only the audit log can name it, and it may deliver late.
func unattributedRemoval(f refluxv1.DriftField) bool {
	return f.Modifier == nil && f.ChangeType == refluxv1.ChangeRemove && f.Pointer != refluxv1.WholeObjectPointer
}

func liveState(u *unstructured.Unstructured) decide.Live {
	a := u.GetAnnotations()
	return decide.Live{Exists: true, Held: a[refluxv1.ReconcileAnnotation] == refluxv1.ReconcileDisabled && a[refluxv1.HeldByAnnotation] != "",
		HeldBy: a[refluxv1.HeldByAnnotation]}
}

// held reports whether the object carries the hold of record name.
func held(u *unstructured.Unstructured, name string) bool {
	l := liveState(u)
	return l.Held && l.HeldBy == name
}

// heldAny reports whether the object carries any reflux hold.
func heldAny(u *unstructured.Unstructured) bool {
	return liveState(u).Held
}

func (gv *Governor) inShard(ctx context.Context, ks types.NamespacedName) (bool, error) {
	if gv.opts.InShard == nil {
		return true, nil
	}
	return gv.opts.InShard(ctx, ks)
}
