package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/record"
)

// report turns a Kustomization's open drift records into its Drifted
// condition and metrics, and hands a changed drift set to write-back.
func (r *KustomizationReconciler) report(ctx context.Context, g *Governed, resynced bool) error {
	ks := g.Kustomization
	ref := refluxv1.KustomizationRef{Namespace: ks.Namespace, Name: ks.Name}
	all, err := r.records(ctx, ref)
	if err != nil {
		return err
	}
	if err := r.processDismissals(ctx, g, all); err != nil {
		return err
	}
	open := openOnly(all)
	r.Metrics.record(ref, open)
	cond := conditions.FalseCondition(refluxv1.DriftedCondition, refluxv1.NoDriftReason,
		"no drift from revision %s", g.Render.Revision)
	if len(open) > 0 {
		cond = conditions.TrueCondition(refluxv1.DriftedCondition, refluxv1.DriftDetectedReason, "%s", driftMessage(open))
	}
	if err := r.patchDrifted(ctx, ks, cond); err != nil {
		return err
	}
	return r.handOff(ctx, g, open, resynced)
}

// records lists the Kustomization's drift records.
func (r *KustomizationReconciler) records(ctx context.Context, ks refluxv1.KustomizationRef) ([]refluxv1.Drift, error) {
	list := &refluxv1.DriftList{}
	if err := r.List(ctx, list, client.InNamespace(ks.Namespace), client.MatchingLabels{
		record.KustomizationNameLabel: ks.Name, record.KustomizationNamespaceLabel: ks.Namespace,
	}); err != nil {
		return nil, fmt.Errorf("listing drift records: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// openOnly keeps the records that still ask for attention.
func openOnly(all []refluxv1.Drift) []refluxv1.Drift {
	var open []refluxv1.Drift
	for _, d := range all {
		if record.IsOpen(&d) && d.DeletionTimestamp.IsZero() {
			open = append(open, d)
		}
	}
	return open
}

// handOff gives write-back the drift set when its fingerprint changed.
// Write-back is idempotent per fingerprint, so a repeat after a restart is
// harmless; the in-memory fingerprint only spares it the work.
func (r *KustomizationReconciler) handOff(ctx context.Context, g *Governed, open []refluxv1.Drift, resynced bool) error {
	if r.Handler == nil {
		return nil
	}
	key := g.Kustomization.Namespace + "/" + g.Kustomization.Name
	fp := reverse.Fingerprint(open)
	r.mu.Lock()
	same := r.fingerprint[key] == fp
	r.mu.Unlock()
	// Nothing changed: at a resync, open drift is tried again (the base may
	// have moved, a branch may have been closed); with nothing open and
	// nothing changed there is no reason to touch Git at all.
	if same && (!resynced || len(open) == 0) {
		return nil
	}
	set := reverse.DriftSet{
		Kustomization: refluxv1.KustomizationRef{Namespace: g.Kustomization.Namespace, Name: g.Kustomization.Name},
		Spec:          g.Kustomization, Policy: g.Policy, Revision: g.Render.Revision, Records: open,
	}
	if err := r.writeTarget(ctx, g, &set); err != nil {
		return err
	}
	// Branches first: a drift whose branch a reviewer closed is dismissed,
	// never pushed again.
	if err := r.lifecycle(ctx, g, &set); err != nil {
		failed := []reverse.Proposal{{Outcome: refluxv1.GitErrorReason, Reason: err.Error()}}
		return errors.Join(err, r.recordProposals(ctx, g, set.Records, failed))
	}
	set.Fingerprint = reverse.Fingerprint(set.Records)
	start := time.Now()
	proposals, err := r.Handler.HandleDriftSet(ctx, set)
	r.Metrics.observeWriteBackDuration(time.Since(start))
	if err == nil && len(proposals) == 0 {
		// Nothing left to write: say so, rather than keep reporting the
		// last branch as if it still carried open drift.
		proposals = []reverse.Proposal{{Outcome: refluxv1.UpToDateReason, Reason: "no open drift to write back"}}
	}
	if perr := r.recordProposals(ctx, g, set.Records, proposals); perr != nil {
		err = errors.Join(err, perr)
	}
	if err != nil {
		return fmt.Errorf("handing drift set %s to write-back: %w", set.Fingerprint, err)
	}
	r.mu.Lock()
	r.fingerprint[key] = fp
	r.mu.Unlock()
	return nil
}

// lifecycle dismisses records whose branch a reviewer closed unmerged, so
// their holds are released and Flux restores Git's value, and drops them
// from the set.
func (r *KustomizationReconciler) lifecycle(ctx context.Context, g *Governed, set *reverse.DriftSet) error {
	lc, ok := r.Handler.(reverse.BranchLifecycle)
	if !ok {
		return nil
	}
	state, err := lc.Lifecycle(ctx, *set)
	if err != nil {
		return fmt.Errorf("checking reflux branches: %w", err)
	}
	closed := map[string]bool{}
	for _, name := range state.Closed {
		closed[name] = true
	}
	kept := set.Records[:0:0]
	for i := range set.Records {
		d := &set.Records[i]
		if !closed[d.Name] {
			kept = append(kept, *d)
			continue
		}
		ctrl.LoggerFrom(ctx).Info("branch closed without merging; dismissing drift", "record", d.Name, "branch", d.Status.Branch)
		if err := r.Engine.Dismiss(ctx, g, d); err != nil {
			return err
		}
	}
	set.Records = kept
	r.Metrics.setPending(g.Kustomization.Namespace, g.Kustomization.Name, len(state.Pending))
	return nil
}

// driftMessage summarises open records by severity and action, most
// severe first: "3 field(s) in 2 object(s) drifted: 1 critical, 2 low; 2
// Alert, 1 Merge". Which objects are held, and since when, is in the
// records and the policy's status: counting them here would rewrite the
// Kustomization's status twice for every change.
func driftMessage(open []refluxv1.Drift) string {
	bySeverity := map[refluxv1.Severity]int{}
	byAction := map[refluxv1.Action]int{}
	fields := 0
	for _, d := range open {
		for _, f := range d.Spec.Fields {
			fields++
			bySeverity[f.Severity]++
			byAction[f.Action]++
		}
	}
	var sev, act []string
	for _, s := range []refluxv1.Severity{refluxv1.SeverityCritical, refluxv1.SeverityHigh, refluxv1.SeverityMedium, refluxv1.SeverityLow} {
		if n := bySeverity[s]; n > 0 {
			sev = append(sev, fmt.Sprintf("%d %s", n, s))
		}
	}
	for _, a := range []refluxv1.Action{refluxv1.MergeAction, refluxv1.AlertAction, refluxv1.IgnoreAction} {
		if n := byAction[a]; n > 0 {
			act = append(act, fmt.Sprintf("%d %s", n, a))
		}
	}
	return fmt.Sprintf("%d field(s) in %d object(s) drifted: %s; %s",
		fields, len(open), strings.Join(sev, ", "), strings.Join(act, ", "))
}
