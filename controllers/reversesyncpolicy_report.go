package controllers

import (
	"context"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/record"
)

// maxReportEntries bounds the drift report in a policy's status; the rest
// is counted in Overflow, so the object stays small however much drifts.
const maxReportEntries = 50

// summarise fills the policy's drift report and pending branches from the
// Drift records it classified. The records are the truth; the summary is
// rebuilt from them each time.
func (r *ReverseSyncPolicyReconciler) summarise(ctx context.Context, obj *refluxv1.ReverseSyncPolicy) error {
	list := &refluxv1.DriftList{}
	if err := r.List(ctx, list, client.InNamespace(obj.Namespace)); err != nil {
		return fmt.Errorf("listing drift records: %w", err)
	}
	report := &refluxv1.DriftReport{BySeverity: map[refluxv1.Severity]int32{}, ByAction: map[refluxv1.Action]int32{}}
	var entries []refluxv1.DriftSummary
	pending := map[string]refluxv1.PendingBranch{}
	for i := range list.Items {
		d := &list.Items[i]
		if d.Spec.Policy != obj.Name || !record.IsOpen(d) || !d.DeletionTimestamp.IsZero() {
			continue
		}
		for _, f := range d.Spec.Fields {
			report.BySeverity[f.Severity]++
			report.ByAction[f.Action]++
		}
		_, severity := record.Summary(d.Spec.Fields)
		state := d.Status.State
		if state == "" {
			state = refluxv1.DriftDetected // created, status not written yet
		}
		entries = append(entries, refluxv1.DriftSummary{
			Record: d.Name, Kustomization: d.Spec.Kustomization.Name,
			Object: d.Spec.Object.Kind + "/" + d.Spec.Object.Namespace + "/" + d.Spec.Object.Name,
			Fields: int32(len(d.Spec.Fields)), Severity: severity, State: state, HeldSince: d.Status.HeldSince,
		})
		if d.Status.State == refluxv1.DriftProposed && d.Status.Branch != "" {
			pending[d.Status.Branch] = refluxv1.PendingBranch{
				Kustomization: d.Spec.Kustomization.Name, Branch: d.Status.Branch, Commit: d.Status.Commit,
				Action: refluxv1.Action(d.Status.Action), PushedAt: d.Spec.LastSeen, PullRequest: d.Status.PullRequest,
			}
		}
	}
	// Most severe first, then by name, so the bounded list keeps what
	// matters and is stable between reconciles.
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.Severity != b.Severity {
			return classify.MaxSeverity(a.Severity, b.Severity) == a.Severity
		}
		return a.Record < b.Record
	})
	obj.Status.DriftedObjects = int32(len(entries))
	if len(entries) > maxReportEntries {
		report.Overflow = int32(len(entries) - maxReportEntries)
		entries = entries[:maxReportEntries]
	}
	report.Entries = entries
	obj.Status.Drift = report
	obj.Status.PendingBranches = sortedPending(pending)
	return nil
}

func sortedPending(m map[string]refluxv1.PendingBranch) []refluxv1.PendingBranch {
	out := make([]refluxv1.PendingBranch, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Branch < out[j].Branch })
	if len(out) > 64 {
		out = out[:64]
	}
	return out
}
