package report

import (
	"sort"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/record"
)

// MaxPolicyEntries bounds the drift report in a policy's status; the rest
// is counted in Overflow, so the object stays small however much drifts.
const MaxPolicyEntries = 50

// maxPendingBranches bounds the pending branches a policy's status lists.
const maxPendingBranches = 64

// PolicyReport is what a ReverseSyncPolicy's status says of its drift.
type PolicyReport struct {
	// Drift counts the open records' fields by severity and action, and
	// lists the most severe records.
	Drift *refluxv1.DriftReport
	// DriftedObjects counts the open records.
	DriftedObjects int32
	// PendingBranches are the branches awaiting review.
	PendingBranches []refluxv1.PendingBranch
}

// Policy summarises the Drift records the policy named classified: its
// drift report and pending branches. The records are the truth; the
// summary is rebuilt from them each time.
func Policy(name string, records []refluxv1.Drift) PolicyReport {
	report := &refluxv1.DriftReport{BySeverity: map[refluxv1.Severity]int32{}, ByAction: map[refluxv1.Action]int32{}}
	var entries []refluxv1.DriftSummary
	pending := map[string]refluxv1.PendingBranch{}
	for i := range records {
		d := &records[i]
		if d.Spec.Policy != name || !record.IsOpen(d) || !d.DeletionTimestamp.IsZero() {
			continue
		}
		for _, f := range d.Spec.Fields {
			report.BySeverity[f.Severity]++
			report.ByAction[f.Action]++
		}
		entries = append(entries, summary(d))
		if d.Status.State == refluxv1.DriftProposed && d.Status.Branch != "" {
			if seen, ok := pending[d.Status.Branch]; ok && !pushedAt(d).After(seen.PushedAt.Time) {
				continue // the branch's latest push, whichever record knows it
			}
			pending[d.Status.Branch] = refluxv1.PendingBranch{
				Kustomization: d.Spec.Kustomization.Name, Branch: d.Status.Branch, Commit: d.Status.Commit,
				Action: refluxv1.Action(d.Status.Action), PushedAt: pushedAt(d), PullRequest: d.Status.PullRequest,
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
	out := PolicyReport{Drift: report, DriftedObjects: int32(len(entries)), PendingBranches: sortedPending(pending)}
	if len(entries) > MaxPolicyEntries {
		report.Overflow = int32(len(entries) - MaxPolicyEntries)
		entries = entries[:MaxPolicyEntries]
	}
	report.Entries = entries
	return out
}

// summary is one open record's line in the report.
func summary(d *refluxv1.Drift) refluxv1.DriftSummary {
	_, severity := record.Summary(d.Spec.Fields)
	state := d.Status.State
	if state == "" {
		state = refluxv1.DriftDetected // created, status not written yet
	}
	return refluxv1.DriftSummary{
		Record: d.Name, Kustomization: d.Spec.Kustomization.Name,
		Object: d.Spec.Object.Kind + "/" + d.Spec.Object.Namespace + "/" + d.Spec.Object.Name,
		Fields: int32(len(d.Spec.Fields)), Severity: severity, State: state, HeldSince: d.Status.HeldSince,
	}
}

func sortedPending(m map[string]refluxv1.PendingBranch) []refluxv1.PendingBranch {
	out := make([]refluxv1.PendingBranch, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Branch < out[j].Branch })
	if len(out) > maxPendingBranches {
		out = out[:maxPendingBranches]
	}
	return out
}

// pushedAt is when reflux pushed d's branch, as its ReverseSynced
// condition turned True with BranchPushed; lastSeen for a record written
// before the condition, which moves at most hourly
// (decide.LastSeenResolution).
func pushedAt(d *refluxv1.Drift) metav1.Time {
	if c := apimeta.FindStatusCondition(d.Status.Conditions, refluxv1.ReverseSyncedCondition); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == refluxv1.BranchPushedReason {
		return c.LastTransitionTime
	}
	return d.Spec.LastSeen
}
