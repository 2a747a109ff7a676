package execute

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
)

// close moves a record to Resolved or Dismissed, with how and by whom it
// closed, then releases its hold. The state is written first: once the
// record is closed the live path never holds the object again for the
// same drift, so the release is final. Until the release happened the
// record keeps status.heldSince (decide.OwesRelease), as expire does: a
// release that fails is asked again from the record, by the expiry
// timers or after a restart (issue 22 §3: it used to be lost, the record
// closed and saying nothing was held).
func (x *Executor) close(ctx context.Context, p *Plan, d decide.Decision) error {
	state := refluxv1.DriftResolved
	if d.Action == decide.Dismiss {
		state = refluxv1.DriftDismissed
	}
	rec := d.Record.DeepCopy()
	patch := client.MergeFromWithOptions(d.Record, client.MergeFromWithOptimisticLock{})
	rec.Status.State = state
	if d.Hold != decide.Release {
		rec.Status.HeldSince = nil
	}
	if c := d.Closed; c != nil {
		revision := ""
		if p.Kustomization != nil {
			revision = p.Kustomization.Status.LastAppliedRevision
		}
		if x.opts.Closer != nil {
			c = x.opts.Closer(d.Record, c, revision)
		}
		rec.Status.Closed = c
	}
	if err := x.opts.Sealer.SealStatus(rec); err != nil {
		return err
	}
	if err := x.opts.Client.Status().Patch(ctx, rec, patch); err != nil {
		return fmt.Errorf("closing drift record %s: %w", rec.Name, err)
	}
	if err := x.released(ctx, p, d, rec); err != nil {
		return err
	}
	x.opts.Log.Info("drift record closed", "record", rec.Name, "state", state, "why", d.Why)
	if p.Kustomization != nil && x.opts.Events != nil {
		reason := refluxv1.DriftResolvedEventReason
		if state == refluxv1.DriftDismissed {
			reason = refluxv1.DriftDismissedEventReason
		}
		x.opts.Events.AnnotatedEventf(p.Kustomization, map[string]string{MetaKey("reflux-record"): rec.Name},
			"Normal", reason, "%s %s/%s: drift %s (%s)", rec.Spec.Object.Kind, rec.Spec.Object.Namespace,
			rec.Spec.Object.Name, strings.ToLower(string(state)), closedWhy(rec.Status.Closed, d.Why))
	}
	if d.RequestReconcile {
		return x.requestReconcile(ctx, p)
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

// expire writes an expired hold onto its record, releases the hold when
// the policy says Release, and pages. The status goes first, as in close:
// once the record says Expired the live path never holds the object again
// for the drift that expired. It keeps status.heldSince until the release
// happened (decide.OwesRelease), so a release that fails is retried from
// the record, by the expiry timer or after a restart, and not lost.
func (x *Executor) expire(ctx context.Context, p *Plan, d decide.Decision) error {
	rec := d.Record.DeepCopy()
	if err := x.writeStatus(ctx, rec, d.Record.Status); err != nil {
		return err
	}
	if err := x.released(ctx, p, d, rec); err != nil {
		return err
	}
	x.opts.Log.Info("hold expired", "record", rec.Name, "object", p.object(), "state", rec.Status.State, "why", d.Why)
	if d.Expired && p.Kustomization != nil {
		expiredEvent(x.opts.Events, p, rec)
	}
	if d.RequestReconcile {
		return x.requestReconcile(ctx, p)
	}
	return nil
}

// released applies the decision's hold or release to the object of rec,
// which was just written closed, then writes that the release owed by rec
// happened (decide.Released). A release that fails leaves rec owing it.
func (x *Executor) released(ctx context.Context, p *Plan, d decide.Decision, rec *refluxv1.Drift) error {
	if err := x.hold(ctx, p, d); err != nil {
		if decide.OwesRelease(rec) {
			return fmt.Errorf("releasing the hold of %s record %s, retried while it owes the release: %w", rec.Status.State, rec.Name, err)
		}
		return err
	}
	if d.Hold != decide.Release || !decide.OwesRelease(rec) {
		return nil
	}
	return x.writeStatus(ctx, rec, decide.Released(rec).Status)
}
