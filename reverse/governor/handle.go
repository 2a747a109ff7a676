package governor

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/evaluate"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/record"
)

// The walk of one live change, after the intake's worker took it from the
// live queue: what kind of change it is, whether its render is current
// (else it is parked, and held where Flux would revert it), evaluation
// against the render, and the executor's write of the record and hold.

var _ intake.Handler = &Governor{}

// Handle brings one object's record and hold up to date with what is
// known of it. resync is true for the resync's own checks, which are
// throttled and skip objects known clean.
func (gv *Governor) Handle(ctx context.Context, k intake.Key, c intake.Change, resync bool) error {
	if c.Audited != nil {
		// A Secret reflux does not watch (--secrets=metadata): what the
		// audit log says is all there is to decide on.
		_, err := gv.auditedSecret(ctx, k, c)
		return err
	}
	live, ok := gv.opts.Live.Get(k.GVK, k.Namespace, k.Name)
	if c.Deleted != nil && (!ok || live.GetUID() != c.Deleted.GetUID()) {
		// Deleted, and perhaps recreated by Flux since: the deletion is
		// decided first, then whatever is live now. A deletion kept for
		// later (parked, or waiting for the audit log) comes back with the
		// whole change.
		if kept, err := gv.deletion(ctx, k, c); err != nil || kept {
			return err
		}
		c.Deleted = nil
	}
	if !ok {
		if last := gv.missing(k, c, resync); last != nil {
			// Declared and applied, yet not live, and no watch of this
			// reflux saw it go: deleted while reflux was down or did not
			// lead. Flux recreates it at its next reconcile, so this is
			// the last chance to record it (issue 22 §1).
			c.Deleted, c.Seen = last, gv.now()
			_, err := gv.deletion(ctx, k, c)
			return err
		}
		if c.Deleted == nil && !resync {
			gv.opts.Log.V(1).Info("gone, and no deletion to decide", "object", k.String(), "owner", c.Owner.String())
		}
		return gv.gone(ctx, k, c)
	}
	owner := intake.OwnerOf(live)
	c.Owner = owner
	snap, governed := gv.intake.Snapshot(owner)
	obj := intake.ObjectRef(k.GVK, live)
	name := record.Name(refluxv1.KustomizationRef{Namespace: owner.Namespace, Name: owner.Name}, obj)
	p := execute.Plan{Name: name, Namespace: owner.Namespace, Object: obj, Seen: c.Seen}
	if governed {
		p.Kustomization, p.As = snap.Gov.Kustomization, snap.Gov.Identity
	} else if ok, err := gv.inShard(ctx, owner); err != nil || !ok {
		return err // another shard's, or unknown for now
	}
	err := gv.exec.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		if !governed {
			// Not (or no longer) governed: only what a user asked of a
			// record is done, a dismissal and letting a record go.
			return decide.Decide(decide.Input{Name: name, Record: rec, Live: evaluate.LiveState(live), Now: gv.now()}), nil
		}
		return gv.decide(ctx, k, c, &p, snap, live, rec, resync)
	})
	if err == nil {
		gv.intake.SettleAttribution(k, owner)
	}
	return err
}

// listedSeen is the decision's reason for a predecessor's hold whose
// record has seen the object's latest write; the e2e takeover test finds
// it in the log.
const listedSeen = "held under a record that has seen its latest write"

// decide decides for a governed live object under its record's lock:
// skip what is known clean, park what cannot be evaluated yet (no render
// describes the object as Flux applied it), evaluate the rest.
func (gv *Governor) decide(ctx context.Context, k intake.Key, c intake.Change, p *execute.Plan, snap reverse.Snapshot,
	live *unstructured.Unstructured, rec *refluxv1.Drift, resync bool) (decide.Decision, error) {
	owner := snap.Gov.Key()
	if c.Listed {
		// A predecessor's hold, listed as this replica took over. When
		// the record already says what a look would find, the live lane
		// spends no dry run on it, and no render is waited for; the
		// resync checks it against this replica's render.
		seen, why := evaluate.RecordSawLatestWrite(rec, live, p.Name, gv.opts.Detector.Allowed, gv.opts.Attributor != nil)
		if seen {
			return decide.Decision{Why: listedSeen}, nil
		}
		gv.opts.Log.V(1).Info("a listed hold is looked at again", "record", p.Name, "object", k.String(), "why", why)
	}
	if rec == nil && !evaluate.Held(live, p.Name) {
		if c.Benign && !gv.intake.IsParked(owner, k) {
			// Flux applying, reflux holding or the control plane: never
			// drift, and a clean object stays clean.
			gv.intake.MarkClean(owner, k, c.From, live.GetResourceVersion())
			return decide.Decision{Why: "written by Flux, reflux or the control plane"}, nil
		}
		if resync && gv.intake.IsClean(owner, k, live.GetResourceVersion()) {
			return decide.Decision{Why: "clean since the last check"}, nil
		}
	}
	if decide.PendingDeletion(rec) {
		return gv.recreated(k, c, live, rec, p, snap), nil
	}
	if !snap.Usable(desired.KeyOf(live)) {
		d, current := gv.wait(k, c, live, rec, p, snap.Gov, !resync && !c.Benign)
		if !current {
			return d, nil
		}
		// The render became current meanwhile: evaluate after all.
		var governed bool
		if snap, governed = gv.intake.Snapshot(owner); !governed {
			return decide.Decision{Why: "no longer governed"}, nil
		}
	}
	if resync && p.Seen.IsZero() {
		// Read under the record's lock: a live worker that took the
		// change waits on it, so the resync is first to record it.
		p.Seen = gv.intake.Sighting(owner, k)
	}
	res, err := gv.eval.Live(ctx, evaluate.Input{Snapshot: snap, Live: live, Record: rec, Name: p.Name, Resync: resync, Edits: c.Edits})
	if err != nil {
		return decide.Decision{}, err
	}
	if res.Clean {
		gv.intake.MarkClean(owner, k, "", live.GetResourceVersion())
	} else {
		gv.intake.ForgetClean(owner, k)
	}
	// Also when clean: an attribution that was pending ends here, or its
	// entry would hold write-back back.
	gv.intake.RetryAttribution(k, owner, res.Unattributed)
	return res.Decision, nil
}

// wait parks a change until the render is current, and holds the object
// meanwhile when Flux would revert the change and the policy lets it. A
// live change someone made (write) is recorded at once as Pending, so
// that nobody waits on the render to see it (issue 20 §1); the render
// fills the record in. A dismissal is carried out at once: it needs no
// render. It reports whether the render became current meanwhile, in
// which case nothing was parked.
func (gv *Governor) wait(k intake.Key, c intake.Change, live *unstructured.Unstructured, rec *refluxv1.Drift, p *execute.Plan,
	gov *reverse.Governed, write bool) (decide.Decision, bool) {
	if rec != nil && decide.DismissRequested(rec) {
		return decide.Decide(decide.Input{Name: p.Name, Record: rec, Live: evaluate.LiveState(live), Now: gv.now()}), false
	}
	hold := gov.MayHold() && c.Reverted && !evaluate.HeldAny(live)
	c.Held = c.Held || hold || evaluate.Held(live, p.Name)
	if gv.intake.Park(c.Owner, k, c) {
		return decide.Decision{}, true
	}
	if !write {
		return decide.Pending(decide.PendingInput{Name: p.Name, Record: rec, Live: evaluate.LiveState(live), Hold: hold,
			Now: gv.now()}), false
	}
	in, err := gv.eval.Pending(gov, live, rec, p.Object, p.Name, hold)
	if err != nil {
		// The change stays parked, and its record comes with the render:
		// only the early record is lost, and the log says why.
		gv.opts.Log.Error(err, "the change is kept for the render, but not recorded as pending", "object", k.String())
		in = decide.PendingInput{Name: p.Name, Record: rec, Live: evaluate.LiveState(live), Hold: hold, Now: gv.now()}
	}
	return decide.Pending(in), false
}

// recreated decides for an object whose deletion was written down as
// Pending (pendingDeletion) and that is live again: Flux recreated it
// before the render landed, here or in a leader that died. The deletion
// is what the record is about, so it is decided as one, against the
// render, with the deleter the record names; evaluating the recreated
// object would find nothing and close the record. Until the render
// describes the object, the record waits as it is, and the change is
// parked for it.
func (gv *Governor) recreated(k intake.Key, c intake.Change, live *unstructured.Unstructured, rec *refluxv1.Drift,
	p *execute.Plan, snap reverse.Snapshot) decide.Decision {
	if !snap.Usable(desired.KeyOf(live)) {
		if !gv.intake.Park(c.Owner, k, c) {
			return decide.Decision{Why: "a deletion kept until the render is current"}
		}
		// The render became current meanwhile: decide after all.
		var governed bool
		if snap, governed = gv.intake.Snapshot(c.Owner); !governed {
			return decide.Decision{Why: "no longer governed"}
		}
	}
	want, declared := snap.Render.Object(desired.KeyOf(live))
	if !declared {
		return decide.Decide(decide.Input{Name: p.Name, Record: rec, Evaluated: true, Observation: gv.nothingFound(snap.Gov, p.Object),
			Now: gv.now()})
	}
	m := rec.Spec.LastModifier
	seen := rec.Spec.FirstSeen.Time
	if m.Time != nil {
		seen = m.Time.Time
	}
	obs := evaluate.Deletion(snap.Gov, snap.Render, want, want, reverse.Deleter{User: m.User}, seen, gv.now())
	return decide.Decide(decide.Input{Name: p.Name, Record: rec, Live: decide.Live{}, Evaluated: true, Observation: obs,
		Now: gv.now()})
}

// missing returns the object as the current render declares it when a
// resync finds it declared, applied by Flux (in its inventory) and not
// live; nil otherwise.
func (gv *Governor) missing(k intake.Key, c intake.Change, resync bool) *unstructured.Unstructured {
	if !resync || c.Deleted != nil || c.Owner.Name == "" || !gv.opts.Live.Complete(k.GVK, k.Namespace) {
		return nil
	}
	snap, governed := gv.intake.Snapshot(c.Owner)
	if !governed || !snap.Current {
		return nil
	}
	want, declared := snap.Render.Object(desired.ObjectKey{Group: k.GVK.Group, Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name})
	if !declared || drift.DesiredSkip(want) != "" || !reverse.Applied(snap.Gov.Kustomization, want) {
		// Flux's inventory lists an object Git marks ssa: Ignore,
		// IfNotPresent or reconcile: disabled even when Flux never
		// created it.
		return nil
	}
	return want.DeepCopy()
}

// gone handles an object that is no longer live: a deleted record of it
// may go.
func (gv *Governor) gone(ctx context.Context, k intake.Key, c intake.Change) error {
	if c.Owner.Name == "" {
		return nil
	}
	ks := refluxv1.KustomizationRef{Namespace: c.Owner.Namespace, Name: c.Owner.Name}
	name := record.Name(ks, c.Object)
	p := execute.Plan{Name: name, Namespace: c.Owner.Namespace, Object: c.Object}
	snap, governed := gv.intake.ForgetGone(c.Owner, k)
	if governed {
		p.Kustomization, p.As = snap.Gov.Kustomization, snap.Gov.Identity
	} else if ok, err := gv.inShard(ctx, c.Owner); err != nil || !ok {
		return err
	}
	return gv.exec.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		return decide.Decide(decide.Input{Name: name, Record: rec, Live: decide.Live{}, Now: gv.now()}), nil
	})
}

// deletion decides for a governed object someone deleted. The applied
// revision still declaring the object is what tells a deletion apart from
// Flux's own garbage collection: kustomize-controller prunes only what a
// revision it is applying no longer renders, or everything when its
// Kustomization is deleted. A deletion seen while the render is not
// current is parked like any change, because it may be that prune. The
// record has one field, the whole object removed, and no hold: nothing is
// left to hold, and Flux recreates the object at its next reconcile.
//
// It reports whether the change was kept for later.
func (gv *Governor) deletion(ctx context.Context, k intake.Key, c intake.Change) (bool, error) {
	kept, err := gv.decideDeletion(ctx, k, c)
	gv.opts.Log.V(1).Info("deletion looked at", "object", k.String(), "uid", c.Deleted.GetUID(), "kept", kept, "error", err)
	if !kept {
		// Decided (or given up): the next deletion of this object waits
		// for the audit log afresh.
		gv.intake.DeleterKnown(k)
	}
	return kept, err
}

func (gv *Governor) decideDeletion(ctx context.Context, k intake.Key, c intake.Change) (bool, error) {
	last := c.Deleted
	if snap, governed := gv.intake.Snapshot(c.Owner); governed && !snap.Gov.Kustomization.DeletionTimestamp.IsZero() {
		return false, nil // Flux garbage-collecting a deleted Kustomization
	}
	snap, governed, kept := gv.intake.CurrentOrPark(k, c)
	if !governed {
		return kept, nil
	}
	if kept {
		return true, gv.pendingDeletion(ctx, k, c)
	}
	want, declared := snap.Render.Object(desired.KeyOf(last))
	if !declared {
		// Pruned: the applied revision no longer renders it.
		return false, gv.notDeleted(ctx, snap, c, intake.ObjectRef(k.GVK, last), "pruned: the applied revision no longer declares it")
	}
	deleter, known := gv.deleter(last, c)
	if !known && gv.intake.WaitForDeleter(k, c) {
		return true, nil
	}
	if deleter.Flux {
		// kustomize-controller recreating an object whose immutable
		// field changed (spec.force), or pruning: Flux's own deletion.
		return false, gv.notDeleted(ctx, snap, c, intake.ObjectRef(k.GVK, last), "deleted by Flux")
	}
	obs := evaluate.Deletion(snap.Gov, snap.Render, want, last, deleter, c.Seen, gv.now())
	return false, gv.record(ctx, snap, c, intake.ObjectRef(k.GVK, last), decide.Live{}, obs)
}

// pendingDeletion writes down a deletion parked for its render as a
// Pending record, as a live edit is: the parked change lives in this
// process only, and a leader that dies before the render lands would
// lose it, since Flux recreates the object before the next leader's
// resync can find it missing (the soak lost most of its deletions so).
// One Flux made is not drift. One the audit log has not named yet is
// looked at again shortly; once those looks are spent it is written with
// no deleter, as without an audit log: a silent or late audit log must
// not leave the deletion in this process only. If it was Flux's prune
// after all, the render closes the record (notDeleted). The render fills
// the record in (deletion), or, for an object Flux recreated meanwhile,
// the next look at it does (recreated).
func (gv *Governor) pendingDeletion(ctx context.Context, k intake.Key, c intake.Change) error {
	deleter, known := gv.deleter(c.Deleted, c)
	if !known && gv.intake.WaitForDeleter(k, c) {
		return nil
	}
	snap, governed := gv.intake.Snapshot(c.Owner)
	if deleter.Flux || !governed {
		return nil
	}
	return gv.writePendingDeletion(ctx, k, c, snap, deleter)
}

// writePendingDeletion writes a deletion down as a Pending record, with
// the deleter the audit log named (none when it has not yet).
func (gv *Governor) writePendingDeletion(ctx context.Context, k intake.Key, c intake.Change, snap reverse.Snapshot,
	deleter reverse.Deleter) error {
	p := planFor(snap.Gov, c, intake.ObjectRef(k.GVK, c.Deleted))
	at := metav1.NewTime(c.Seen)
	if c.Seen.IsZero() {
		at = metav1.NewTime(gv.now())
	}
	return gv.exec.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		return decide.Pending(decide.PendingInput{Name: p.Name, Record: rec, Kustomization: snap.Gov.Ref(), Policy: snap.Gov.Policy.Name,
			Object: p.Object, Writer: &refluxv1.Modifier{Operation: refluxv1.DeleteOperation, User: deleter.User, Time: &at},
			Now: gv.now()}), nil
	})
}

// notDeleted closes the Pending record of a deletion that turned out
// not to be drift once its render landed; any other record of the object
// is left as it is.
func (gv *Governor) notDeleted(ctx context.Context, snap reverse.Snapshot, c intake.Change, obj refluxv1.ObjectRef, why string) error {
	p := planFor(snap.Gov, c, obj)
	return gv.exec.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		if !decide.PendingDeletion(rec) {
			return decide.Decision{Why: why}, nil
		}
		return decide.Decide(decide.Input{Name: p.Name, Record: rec, Evaluated: true, Observation: gv.nothingFound(snap.Gov, obj),
			Now: gv.now()}), nil
	})
}

// deleter asks the audit log who deleted last; a deletion a predecessor
// wrote down says so itself when this process's audit store has not
// heard of it.
func (gv *Governor) deleter(last *unstructured.Unstructured, c intake.Change) (reverse.Deleter, bool) {
	if gv.opts.Attributor == nil {
		return reverse.Deleter{User: c.DeletedBy}, true // no audit log: nothing to wait for
	}
	d, known := gv.opts.Attributor.Deleter(last, c.Seen)
	if !known && c.DeletedBy != "" {
		return reverse.Deleter{User: c.DeletedBy}, true
	}
	return d, known
}

// auditedSecret decides for a Secret the audit log saw written. The record
// has one field, the whole object: changed (content unknown) or deleted.
// There is no hold, because holding needs the patch verb, and a patch's
// response is the whole Secret; write-back refuses the field, because
// reflux never read what to write. It reports whether the change was kept
// for later.
func (gv *Governor) auditedSecret(ctx context.Context, k intake.Key, c intake.Change) (bool, error) {
	snap, governed, kept := gv.intake.CurrentOrPark(k, c)
	if !governed || kept {
		return kept, nil
	}
	want, declared := snap.Render.Object(desired.ObjectKey{Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name})
	if !declared {
		return false, nil // another Kustomization's, or not Flux's
	}
	obs := evaluate.AuditedSecret(snap.Gov, snap.Render, want, *c.Audited, c.Seen, gv.now())
	// The Secret is taken to exist, unless deleted: only a deletion is
	// Decide's whole-object drift with nothing left.
	return false, gv.record(ctx, snap, c, c.Object, decide.Live{Exists: c.Audited.Verb != "delete"}, obs)
}

// record decides and writes a whole-object observation of obj.
func (gv *Governor) record(ctx context.Context, snap reverse.Snapshot, c intake.Change, obj refluxv1.ObjectRef, live decide.Live,
	obs record.Observation) error {
	p := planFor(snap.Gov, c, obj)
	return gv.exec.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		return decide.Decide(decide.Input{Name: p.Name, Record: rec, Live: live, Evaluated: true, Observation: obs, Now: gv.now()}), nil
	})
}

// planFor is the plan of a governed Kustomization's record of obj, acted
// on as the Kustomization's identity.
func planFor(g *reverse.Governed, c intake.Change, obj refluxv1.ObjectRef) execute.Plan {
	ks := g.Ref()
	return execute.Plan{Name: record.Name(ks, obj), Namespace: ks.Namespace, Object: obj, Kustomization: g.Kustomization,
		Seen: c.Seen, As: g.Identity}
}

// nothingFound is an evaluation that found no divergence in obj: a
// Pending record it meets closes as NoDrift.
func (gv *Governor) nothingFound(g *reverse.Governed, obj refluxv1.ObjectRef) record.Observation {
	return record.Observation{Kustomization: g.Ref(), Policy: g.Policy.Name, Object: obj, Now: gv.now()}
}

func (gv *Governor) inShard(ctx context.Context, ks types.NamespacedName) (bool, error) {
	if gv.opts.InShard == nil {
		return true, nil
	}
	return gv.opts.InShard(ctx, ks)
}
