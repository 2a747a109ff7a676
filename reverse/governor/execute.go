package governor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/record"
)

// plan names the record and object a decision is about.
type plan struct {
	name, namespace string
	obj             refluxv1.ObjectRef
	// ks is the governing Kustomization, for events and reconcile
	// requests; nil when it is not governed.
	ks *kustomizev1.Kustomization
	// seen is when the change reached the watch, for detection latency.
	seen time.Time
	// as is the identity the hold and release go out as: the governing
	// Kustomization's (Governed.Identity); "" is reflux's own, also for a
	// Kustomization no longer governed, whose holds reflux still lets go.
	as string
}

// executor applies decisions. It is the only writer of Drift records, and
// it serialises its work per record, so a live evaluation and a write-back
// result never interleave on one record.
type executor struct {
	client  client.Client
	fresh   client.Reader
	holder  Holder
	events  EventRecorder
	metrics *Metrics
	log     logr.Logger
	now     func() time.Time
	locks   *keyedMutex
	sealer  *record.Sealer
	// impersonation acts as a plan's identity; nil acts as reflux.
	impersonation Impersonation
	marker        Marker
	// closer fills in who closed a record and at which revision
	// (Governor.withCloser); nil writes the closure as decided.
	closer func(rec *refluxv1.Drift, c *refluxv1.DriftClosure, revision string) *refluxv1.DriftClosure
}

// maxAttempts bounds how often a decision is re-made after a write lost a
// race: the cache was behind, or a user changed the record meanwhile.
const maxAttempts = 3

// withRecord reads the plan's record, decides with fn and applies the
// decision, under the record's lock. A write that loses a race is decided
// again from a fresh read.
func (x *executor) withRecord(ctx context.Context, p *plan, fn func(rec *refluxv1.Drift) (decide.Decision, error)) error {
	unlock := x.locks.lock(p.namespace + "/" + p.name)
	defer unlock()
	var reader client.Reader = x.client
	for attempt := 1; ; attempt++ {
		rec, err := readRecord(ctx, reader, p.namespace, p.name)
		if err != nil {
			return err
		}
		if rec != nil {
			if why := x.sealer.Verify(rec); why != nil {
				if err := x.discard(ctx, p, rec, why); err != nil {
					return err
				}
				rec = nil
			}
		}
		d, err := fn(rec)
		if err != nil {
			return err
		}
		err = x.apply(ctx, p, d)
		if !raced(err) || attempt == maxAttempts {
			return err
		}
		reader = x.fresh
	}
}

func raced(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

func readRecord(ctx context.Context, r client.Reader, namespace, name string) (*refluxv1.Drift, error) {
	rec := &refluxv1.Drift{}
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, rec)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading drift record %s/%s: %w", namespace, name, err)
	}
	return rec, nil
}

// apply carries out one decision: the record and the hold, then the
// manual-hotfix annotation an audit-derived hotfix asks for.
func (x *executor) apply(ctx context.Context, p *plan, d decide.Decision) error {
	if err := x.applyRecord(ctx, p, d); err != nil {
		return err
	}
	return x.mark(ctx, p, d)
}

func (x *executor) applyRecord(ctx context.Context, p *plan, d decide.Decision) error {
	switch d.Action {
	case decide.Create, decide.Update, decide.Reopen:
		return x.write(ctx, p, d)
	case decide.SetStatus:
		return x.writeStatus(ctx, d.Record.DeepCopy(), d.Record.Status)
	case decide.Resolve, decide.Dismiss:
		return x.close(ctx, p, d)
	case decide.Expire:
		return x.expire(ctx, p, d)
	case decide.Finalize:
		if err := x.hold(ctx, p, d); err != nil {
			return err
		}
		return x.finalize(ctx, d.Record)
	default:
		if err := x.hold(ctx, p, d); err != nil {
			return err
		}
		if d.Hold == decide.Release && d.RequestReconcile && p.ks != nil {
			// A release finished late (finishRelease): Flux restores
			// Git now rather than at its next interval.
			return x.requestReconcile(ctx, p.ks)
		}
		return nil
	}
}

// write creates or updates a record. The hold and the record's spec go
// out together: the hold is what stops Flux's revert, and waiting for one
// before the other would only widen the window. The status says Held only
// once the hold is in.
func (x *executor) write(ctx context.Context, p *plan, d decide.Decision) error {
	holdDone := make(chan error, 1)
	go func() { holdDone <- x.hold(ctx, p, d) }()
	rec := d.Record.DeepCopy()
	status := rec.Status
	specErr := x.writeSpec(ctx, rec, d)
	if specErr == nil && d.HotfixMarked {
		// Counted once the record says so: a failed hold or status write
		// is retried from a record already marked, which never counts.
		x.metrics.observeHotfix(p)
	}
	if err := errors.Join(<-holdDone, specErr); err != nil {
		return err
	}
	// A spec whose fields changed takes a fresh status seal with it; one
	// that only moved lastSeen keeps the status seal valid (record/seal.go).
	if d.WriteStatus || d.Action == decide.Create || d.Changed && d.WriteSpec {
		if err := x.writeStatus(ctx, rec, status); err != nil {
			return err
		}
	}
	if d.Changed {
		x.metrics.observeDetection(p, x.now())
		x.log.Info("drift recorded", "record", rec.Name, "object", p.obj.Kind+"/"+p.obj.Namespace+"/"+p.obj.Name,
			"fields", len(rec.Spec.Fields), "state", status.State, "manualHotfix", rec.Spec.ManualHotfix)
		if p.ks != nil {
			driftEvent(x.events, p.ks, rec)
		}
	}
	return nil
}

func (x *executor) writeSpec(ctx context.Context, rec *refluxv1.Drift, d decide.Decision) error {
	if d.Action == decide.Create || d.WriteSpec {
		if err := x.sealer.Seal(rec); err != nil {
			return err
		}
	}
	switch {
	case d.Action == decide.Create:
		controllerutil.AddFinalizer(rec, refluxv1.DriftFinalizer)
		if err := x.client.Create(ctx, rec); err != nil {
			return fmt.Errorf("creating drift record %s: %w", rec.Name, err)
		}
	case d.WriteSpec:
		if err := x.client.Update(ctx, rec); err != nil {
			return fmt.Errorf("updating drift record %s: %w", rec.Name, err)
		}
	}
	return nil
}

// writeStatus writes a record's status, conditioned on the version just
// read or written.
func (x *executor) writeStatus(ctx context.Context, rec *refluxv1.Drift, status refluxv1.DriftStatus) error {
	rec.Status = status
	rec.Status.ObservedGeneration = rec.Generation
	if err := x.sealer.SealStatus(rec); err != nil {
		return err
	}
	if err := x.client.Status().Update(ctx, rec); err != nil {
		return fmt.Errorf("updating drift record status %s: %w", rec.Name, err)
	}
	return nil
}

// hold applies the decision's hold or release.
func (x *executor) hold(ctx context.Context, p *plan, d decide.Decision) error {
	if d.Hold != decide.Hold && d.Hold != decide.Release {
		return nil
	}
	holder, err := x.holderFor(p.as)
	if err != nil {
		return err
	}
	switch d.Hold {
	case decide.Hold:
		if err := holder.Hold(ctx, p.obj, p.name, d.HeldSince); err != nil {
			return err
		}
		if d.Action == decide.Keep {
			x.log.Info("held before evaluation", "record", p.name, "object", p.obj.Kind+"/"+p.obj.Namespace+"/"+p.obj.Name, "why", d.Why)
		}
	case decide.Release:
		if err := holder.Release(ctx, p.obj); err != nil {
			return err
		}
		x.log.Info("hold released", "record", p.name, "object", p.obj.Kind+"/"+p.obj.Namespace+"/"+p.obj.Name, "why", d.Why)
	}
	return nil
}

// close moves a record to Resolved or Dismissed, then releases its hold.
// The state is written first: once the record is closed the live path
// never holds the object again for the same drift, so the release is
// final.
func (x *executor) close(ctx context.Context, p *plan, d decide.Decision) error {
	state := refluxv1.DriftResolved
	if d.Action == decide.Dismiss {
		state = refluxv1.DriftDismissed
	}
	rec := d.Record.DeepCopy()
	patch := client.MergeFromWithOptions(d.Record, client.MergeFromWithOptimisticLock{})
	rec.Status.State, rec.Status.HeldSince = state, nil
	if c := d.Closed; c != nil {
		revision := ""
		if p.ks != nil {
			revision = p.ks.Status.LastAppliedRevision
		}
		if x.closer != nil {
			c = x.closer(d.Record, c, revision)
		}
		rec.Status.Closed = c
	}
	if err := x.sealer.SealStatus(rec); err != nil {
		return err
	}
	if err := x.client.Status().Patch(ctx, rec, patch); err != nil {
		return fmt.Errorf("closing drift record %s: %w", rec.Name, err)
	}
	if err := x.hold(ctx, p, d); err != nil {
		return err
	}
	x.log.Info("drift record closed", "record", rec.Name, "state", state, "why", d.Why)
	if p.ks != nil && x.events != nil {
		reason := DriftResolvedEventReason
		if state == refluxv1.DriftDismissed {
			reason = DriftDismissedEventReason
		}
		x.events.AnnotatedEventf(p.ks, map[string]string{eventMetaKey("reflux-record"): rec.Name},
			"Normal", reason, "%s %s/%s: drift %s (%s)", rec.Spec.Object.Kind, rec.Spec.Object.Namespace,
			rec.Spec.Object.Name, strings.ToLower(string(state)), closedWhy(rec.Status.Closed, d.Why))
	}
	if d.RequestReconcile && p.ks != nil {
		return x.requestReconcile(ctx, p.ks)
	}
	return nil
}

// closedWhy says how a record closed, and by whom, for its event.
func closedWhy(c *refluxv1.DriftClosure, why string) string {
	if c == nil {
		return why
	}
	out := c.Reason
	if c.Message != "" {
		out += ": " + c.Message
	}
	if c.By != "" {
		out += ", by " + c.By
	}
	return out
}

// requestReconcile asks Flux to reconcile now, so a dismissed drift's Git
// value is restored without waiting an interval.
func (x *executor) requestReconcile(ctx context.Context, ks *kustomizev1.Kustomization) error {
	obj := &kustomizev1.Kustomization{}
	obj.Namespace, obj.Name = ks.Namespace, ks.Name
	base := obj.DeepCopy()
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: x.now().UTC().Format(time.RFC3339Nano)}
	if err := x.client.Patch(ctx, obj, client.MergeFrom(base), client.FieldOwner(refluxv1.FieldManager)); err != nil {
		return fmt.Errorf("requesting reconcile of Kustomization %s/%s: %w", ks.Namespace, ks.Name, err)
	}
	return nil
}

// finalize lets a deleted record go.
func (x *executor) finalize(ctx context.Context, d *refluxv1.Drift) error {
	if !controllerutil.ContainsFinalizer(d, refluxv1.DriftFinalizer) {
		return nil
	}
	rec := d.DeepCopy()
	controllerutil.RemoveFinalizer(rec, refluxv1.DriftFinalizer)
	if err := x.client.Patch(ctx, rec, client.MergeFromWithOptions(d, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing finalizer of drift record %s: %w", rec.Name, err)
	}
	return nil
}

// RecordNotSealedEventReason: a Drift record reflux did not write was
// found and deleted.
const RecordNotSealedEventReason = "RecordNotSealed"

// discard deletes a record whose seal does not verify, without acting on
// anything it says: no hold is released for it and nothing is written to
// Git. Its finalizer, if it copied reflux's, is dropped first, since
// reflux's finalizer would otherwise release the hold of whatever object
// the record names. The object is then evaluated as if it had no record,
// so a real drift gets a real record.
//
// Records written before reflux sealed them are discarded the same way;
// the live state they described is recorded afresh (with a new first
// seen) as soon as the engine looks at the object.
func (x *executor) discard(ctx context.Context, p *plan, rec *refluxv1.Drift, why error) error {
	x.log.Error(why, "deleting a drift record reflux did not write; nothing it says is acted on",
		"record", rec.Namespace+"/"+rec.Name, "object", rec.Spec.Object.Kind+"/"+rec.Spec.Object.Namespace+"/"+rec.Spec.Object.Name)
	if p.ks != nil && x.events != nil {
		x.events.AnnotatedEventf(p.ks, map[string]string{eventMetaKey("reflux-record"): rec.Name}, "Warning",
			RecordNotSealedEventReason, "Drift record %s/%s was not written by reflux (%v): deleted, and not acted on",
			rec.Namespace, rec.Name, why)
	}
	if controllerutil.ContainsFinalizer(rec, refluxv1.DriftFinalizer) {
		base := rec.DeepCopy()
		controllerutil.RemoveFinalizer(rec, refluxv1.DriftFinalizer)
		if err := x.client.Patch(ctx, rec, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing reflux's finalizer from unsealed drift record %s: %w", rec.Name, err)
		}
	}
	uid := rec.UID
	if err := x.client.Delete(ctx, rec, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting unsealed drift record %s: %w", rec.Name, err)
	}
	return nil
}

// keyedMutex serialises work per key.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func newKeyedMutex() *keyedMutex { return &keyedMutex{locks: map[string]*keyLock{}} }

func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
