package execute

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
)

// write creates or updates a record. The hold and the record's spec go
// out together: the hold is what stops Flux's revert, and waiting for one
// before the other would only widen the window. The status says Held only
// once the hold is in.
func (x *Executor) write(ctx context.Context, p *Plan, d decide.Decision) error {
	holdDone := make(chan error, 1)
	go func() { holdDone <- x.hold(ctx, p, d) }()
	rec := d.Record.DeepCopy()
	status := rec.Status
	specErr := x.writeSpec(ctx, rec, d)
	if specErr == nil && d.HotfixMarked && x.opts.Metrics != nil {
		// Counted once the record says so: a failed hold or status write
		// is retried from a record already marked, which never counts.
		x.opts.Metrics.ObserveHotfix(p.Namespace, p.Kustomization)
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
	if rec.Status.State == refluxv1.DriftPending && d.WriteSpec {
		x.opts.Log.Info("live change recorded as pending: its Git side is computed when the render lands", "record", rec.Name,
			"object", p.object(), "written", len(rec.Spec.Written), "state", status.State, "held", status.HeldSince != nil)
	}
	if d.Lost {
		x.opts.Log.Info("live change lost over its hold, kept as evidence", "record", rec.Name, "object", p.object(), "why", d.Why)
		if p.Kustomization != nil {
			lostEvent(x.opts.Events, p.Kustomization, rec, d.Why)
		}
	}
	if d.Changed {
		if x.opts.Metrics != nil {
			x.opts.Metrics.ObserveDetection(p.Kustomization, p.Seen, x.opts.Now())
		}
		x.opts.Log.Info("drift recorded", "record", rec.Name, "object", p.object(),
			"fields", len(rec.Spec.Fields), "state", status.State, "manualHotfix", rec.Spec.ManualHotfix)
		if p.Kustomization != nil {
			driftEvent(x.opts.Events, p.Kustomization, rec)
		}
	}
	return nil
}

func (x *Executor) writeSpec(ctx context.Context, rec *refluxv1.Drift, d decide.Decision) error {
	if d.Action == decide.Create || d.WriteSpec {
		if err := x.opts.Sealer.Seal(rec); err != nil {
			return err
		}
	}
	switch {
	case d.Action == decide.Create:
		controllerutil.AddFinalizer(rec, refluxv1.DriftFinalizer)
		if err := x.opts.Client.Create(ctx, rec); err != nil {
			return fmt.Errorf("creating drift record %s: %w", rec.Name, err)
		}
	case d.WriteSpec:
		if err := x.opts.Client.Update(ctx, rec); err != nil {
			return fmt.Errorf("updating drift record %s: %w", rec.Name, err)
		}
	}
	return nil
}

// writeStatus writes a record's status, conditioned on the version just
// read or written.
func (x *Executor) writeStatus(ctx context.Context, rec *refluxv1.Drift, status refluxv1.DriftStatus) error {
	rec.Status = status
	rec.Status.ObservedGeneration = rec.Generation
	if err := x.opts.Sealer.SealStatus(rec); err != nil {
		return err
	}
	if err := x.opts.Client.Status().Update(ctx, rec); err != nil {
		return fmt.Errorf("updating drift record status %s: %w", rec.Name, err)
	}
	return nil
}
