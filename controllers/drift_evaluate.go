package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Evaluate detects the drift of one live object and brings its record and
// hold up to date. seen is when the change was observed (zero for a
// resync); it feeds the detection-latency histogram.
func (e *Engine) Evaluate(ctx context.Context, g *Governed, live *unstructured.Unstructured, seen time.Time) error {
	want, ok := g.Render.Object(desired.KeyOf(live))
	if !ok || g.Kustomization.Status.LastAppliedRevision != g.Render.Revision {
		// Not part of the applied revision, or the render is stale: the
		// Kustomization reconciler re-renders and resyncs.
		return nil
	}
	if writtenBySelfOrFlux(live) && !seen.IsZero() {
		// Flux applying or reflux holding is never drift by itself, and
		// re-checking after reflux's own hold would cost a dry run per
		// change; a full resync still checks the object.
		return nil
	}
	res, err := e.Detector.Detect(ctx, drift.Input{
		Desired: want, Live: live, IgnorePaths: ignorePaths(g.Kustomization, want), Force: g.Kustomization.Spec.Force,
	})
	if errors.Is(err, drift.ErrStale) {
		return nil // a newer event for this object is on its way
	}
	if err != nil {
		return fmt.Errorf("detecting drift: %w", err)
	}
	if res.Skipped != "" {
		return nil
	}
	obs, hold := e.observe(g, live, want, res)
	return e.apply(ctx, g, live, obs, hold, seen)
}

// observe turns detector output into a classified observation.
// It also returns whether the object should be held.
func (e *Engine) observe(g *Governed, live, want *unstructured.Unstructured, res drift.Result) (record.Observation, bool) {
	fields := renderedFields(res)
	ref := origin.RefOf(want)
	for i := range fields {
		fields[i].Origin = fieldOrigin(g.Render.Index, ref, fields[i].Pointer)
		e.attribute(live, &fields[i])
	}
	hotfix := g.Classifier.IsManualHotfix(live.GetAnnotations())
	hold := classifyFields(g.Classifier, want, fields, hotfix)
	return record.Observation{
		Kustomization: refluxv1.KustomizationRef{Namespace: g.Kustomization.Namespace, Name: g.Kustomization.Name},
		Policy:        g.Policy.Name,
		Object: refluxv1.ObjectRef{
			APIVersion: live.GetAPIVersion(), Kind: live.GetKind(), Namespace: live.GetNamespace(),
			Name: live.GetName(), UID: string(live.GetUID()),
		},
		Revision:     g.Render.Revision,
		Fields:       fields,
		ManualHotfix: hotfix,
		Now:          e.now(),
	}, hold
}

// attribute names the user behind a field's last write, from the audit
// log, when reflux receives it.
func (e *Engine) attribute(live *unstructured.Unstructured, f *refluxv1.DriftField) {
	if e.Audit == nil || f.Modifier == nil {
		return
	}
	at := e.now()
	if f.Modifier.Time != nil {
		at = f.Modifier.Time.Time
	}
	key, ok := e.auditKey(live)
	if !ok {
		return
	}
	if w, ok := e.Audit.Lookup(key, f.Modifier.Manager, at); ok {
		f.Modifier.User = w.User
	}
}

// apply writes the hold first (Flux may revert at any moment), then the
// record. Records and holds are keyed deterministically, so a retry after a
// failure between the two converges.
func (e *Engine) apply(ctx context.Context, g *Governed, live *unstructured.Unstructured, obs record.Observation, wantHold bool, seen time.Time) error {
	name := record.Name(obs.Kustomization, obs.Object)
	existing := &refluxv1.Drift{}
	err := e.Client.Get(ctx, client.ObjectKey{Namespace: obs.Kustomization.Namespace, Name: name}, existing)
	if apierrors.IsNotFound(err) {
		existing = nil
	} else if err != nil {
		return fmt.Errorf("reading drift record %s: %w", name, err)
	}
	if existing != nil && dismissRequested(existing) && existing.Status.State != refluxv1.DriftDismissed {
		return e.Dismiss(ctx, g, existing)
	}
	if existing != nil && !record.IsOpen(existing) && held(live) && live.GetAnnotations()[HeldByAnnotation] == existing.Name {
		// Closed, but an earlier release failed: finish it.
		if err := e.Holder.Release(ctx, obs.Object); err != nil {
			return err
		}
	}
	if len(obs.Fields) == 0 {
		return e.settle(ctx, g, existing)
	}
	if existing != nil && !record.IsOpen(existing) {
		if existing.Status.Fingerprint == reverse.Fingerprint([]refluxv1.Drift{*record.Merge(nil, obs)}) ||
			!existing.DeletionTimestamp.IsZero() {
			// Dismissed or resolved, and the same drift (or a deleted
			// record on its way out): leave it be while Flux restores Git.
			return nil
		}
		// A new drift on an object whose earlier drift was closed: a new
		// divergence, with a clean record.
		reopened, err := e.reopen(ctx, existing)
		if err != nil {
			return err
		}
		existing = reopened
	}
	heldSince := metav1.NewTime(e.now())
	if existing != nil && existing.Status.HeldSince != nil {
		heldSince = *existing.Status.HeldSince
	}
	// The hold and the record's spec go out together: the hold is what
	// stops Flux's revert, and waiting for one before the other would
	// only widen the window. The status says Held only once the hold is in.
	holdDone := make(chan error, 1)
	if wantHold && !held(live) {
		go func() { holdDone <- e.Holder.Hold(ctx, obs.Object, name, heldSince.Time) }()
	} else {
		holdDone <- nil
	}
	rec := record.Merge(existing, obs)
	changed, specErr := e.writeSpec(ctx, existing, rec)
	if err := errors.Join(<-holdDone, specErr); err != nil {
		return err
	}
	if err := e.writeStatus(ctx, existing, rec, wantHold, heldSince); err != nil {
		return err
	}
	e.retryAttribution(live, rec)
	if changed {
		e.Metrics.observeDetection(obs.Kustomization, seen, e.now())
		e.Log.Info("drift recorded", "record", rec.Name, "object", obs.Object.Kind+"/"+obs.Object.Namespace+"/"+obs.Object.Name,
			"fields", len(rec.Spec.Fields), "held", wantHold, "manualHotfix", obs.ManualHotfix)
		driftEvent(e.Events, g.Kustomization, rec)
	}
	return nil
}

// writeSpec creates or updates the record's spec, skipping writes that
// would change nothing. It reports whether the recorded drift is new or
// changed.
func (e *Engine) writeSpec(ctx context.Context, existing, rec *refluxv1.Drift) (bool, error) {
	changed := existing == nil || !sameDrift(existing.Spec.Fields, rec.Spec.Fields)
	if existing != nil && rec.Spec.LastSeen.Sub(existing.Spec.LastSeen.Time) < lastSeenResolution {
		// Confirming the same drift again is not worth a write each time:
		// last-seen moves at most once per resolution.
		rec.Spec.LastSeen = existing.Spec.LastSeen
	}
	if existing == nil {
		controllerutil.AddFinalizer(rec, refluxv1.DriftFinalizer)
		if err := e.Client.Create(ctx, rec); err != nil {
			return false, fmt.Errorf("creating drift record %s: %w", rec.Name, err)
		}
	} else if !equality.Semantic.DeepEqual(existing.Spec, rec.Spec) || !equality.Semantic.DeepEqual(existing.Labels, rec.Labels) {
		// Bookkeeping such as a user named late by the audit log is written
		// too, but only a changed drift counts as a new detection.
		if err := e.Client.Update(ctx, rec); err != nil {
			return false, fmt.Errorf("updating drift record %s: %w", rec.Name, err)
		}
	}
	return changed, nil
}

// writeStatus brings the record's status up to date: its summary, its
// fingerprint and its state.
func (e *Engine) writeStatus(ctx context.Context, existing, rec *refluxv1.Drift, holding bool, heldSince metav1.Time) error {
	status := rec.Status.DeepCopy()
	status.ObservedGeneration = rec.Generation
	status.Action, status.Severity = record.Summary(rec.Spec.Fields)
	status.Fingerprint = reverse.Fingerprint([]refluxv1.Drift{*rec})
	switch {
	case status.State == refluxv1.DriftProposed && status.Fingerprint == rec.Status.Fingerprint:
		// A branch already carries exactly this drift.
	case holding:
		status.State = refluxv1.DriftHeld
		status.HeldSince = &heldSince
	default:
		status.State = refluxv1.DriftDetected
		status.HeldSince = nil
	}
	if existing != nil && equality.Semantic.DeepEqual(existing.Status, *status) {
		return nil
	}
	rec.Status = *status
	if err := e.Client.Status().Update(ctx, rec); err != nil {
		return fmt.Errorf("updating drift record status %s: %w", rec.Name, err)
	}
	return nil
}

// lastSeenResolution bounds how often a record is rewritten only to move
// its last-seen time.
const lastSeenResolution = time.Minute

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

// settle handles an object that no longer drifts. A record is resolved only
// when the applied revision now declares what the record saw live (the
// change was merged); Flux reverting a record that is not held leaves the
// evidence open for review.
func (e *Engine) settle(ctx context.Context, g *Governed, existing *refluxv1.Drift) error {
	if existing == nil {
		return nil
	}
	if !existing.DeletionTimestamp.IsZero() && existing.Status.State == refluxv1.DriftDismissed {
		// Flux has restored Git's value: the deleted record may go.
		return e.removeFinalizer(ctx, existing)
	}
	if !record.IsOpen(existing) {
		return nil
	}
	want, ok := g.Render.Object(desired.ObjectKey{
		Group: groupOf(existing.Spec.Object.APIVersion), Kind: existing.Spec.Object.Kind,
		Namespace: existing.Spec.Object.Namespace, Name: existing.Spec.Object.Name,
	})
	if ok && !declaresLiveValues(want, existing.Spec.Fields) {
		return nil
	}
	return e.resolve(ctx, existing, refluxv1.DriftResolved)
}

// resolve moves a record to a final state and releases its hold.
//
// The state is written first, as a merge patch that cannot conflict with
// the live path's writes: once the record is closed, the live path never
// holds the object again for the same drift, so releasing the hold next is
// final.
func (e *Engine) resolve(ctx context.Context, rec *refluxv1.Drift, state refluxv1.DriftState) error {
	wasHeld := rec.Status.HeldSince != nil
	base := rec.DeepCopy()
	rec = rec.DeepCopy()
	rec.Status.State = state
	rec.Status.HeldSince = nil
	if err := e.Client.Status().Patch(ctx, rec, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("closing drift record %s: %w", rec.Name, err)
	}
	if wasHeld {
		if err := e.Holder.Release(ctx, rec.Spec.Object); err != nil {
			return err
		}
	}
	e.Log.Info("drift record closed", "record", rec.Name, "state", state)
	if ks := e.lookup(rec.Spec.Kustomization.Namespace, rec.Spec.Kustomization.Name); ks != nil && e.Events != nil {
		reason := DriftResolvedEventReason
		if state == refluxv1.DriftDismissed {
			reason = DriftDismissedEventReason
		}
		e.Events.AnnotatedEventf(ks.Kustomization, map[string]string{eventMetaKey("reflux-record"): rec.Name},
			"Normal", reason, "%s %s/%s: drift %s", rec.Spec.Object.Kind, rec.Spec.Object.Namespace, rec.Spec.Object.Name,
			strings.ToLower(string(state)))
	}
	return nil
}

// attributionRetries bounds how often an object is looked at again for a
// user the audit log has not delivered yet.
const attributionRetries = 10

// retryAttribution re-queues an object whose fields are not attributed to a
// user yet. The record is written within milliseconds of the change, and
// the apiserver batches audit events, so the user often arrives a moment
// later.
func (e *Engine) retryAttribution(live *unstructured.Unstructured, rec *refluxv1.Drift) {
	if e.Audit == nil {
		return
	}
	key := liveKey{GVK: live.GroupVersionKind(), Namespace: live.GetNamespace(), Name: live.GetName()}
	missing := false
	for _, f := range rec.Spec.Fields {
		if f.Modifier != nil && f.Modifier.User == "" {
			missing = true
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !missing || e.attributionTries[key] >= attributionRetries {
		delete(e.attributionTries, key)
		return
	}
	e.attributionTries[key]++
	e.queue.AddAfter(key, 500*time.Millisecond)
}

// renderedFields returns the detector's fields with pointers into the
// rendered object: records, rules and edits all speak of what the overlay
// declares, and overlays reorder lists, so a live index may name another
// element. A field in a list element only the live object has keeps its
// live pointer, since the render has no position for it.
func renderedFields(res drift.Result) []refluxv1.DriftField {
	fields := res.DriftFields()
	for i, f := range res.Fields {
		if f.GitPointer != "" && !strings.Contains(f.GitPointer+"/", "/-/") {
			fields[i].Pointer = f.GitPointer
		}
	}
	return fields
}

// reopen resets a closed record for a new drift on the same object: the
// dismissal, the branch and the first-seen times belong to the old one.
func (e *Engine) reopen(ctx context.Context, closed *refluxv1.Drift) (*refluxv1.Drift, error) {
	d := closed.DeepCopy()
	delete(d.Annotations, refluxv1.DismissAnnotation)
	d.Spec.Fields = nil
	d.Spec.FirstSeen = metav1.NewTime(e.now())
	if err := e.Client.Update(ctx, d); err != nil {
		return nil, fmt.Errorf("reopening drift record %s: %w", d.Name, err)
	}
	d.Status = refluxv1.DriftStatus{}
	if err := e.Client.Status().Update(ctx, d); err != nil {
		return nil, fmt.Errorf("reopening drift record %s: %w", d.Name, err)
	}
	e.Log.Info("drift record reopened for a new drift", "record", d.Name, "was", closed.Status.State)
	return d, nil
}
