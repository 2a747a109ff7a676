package governor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// ReverseSynced summarises a write-back in the Kustomization's
// ReverseSynced condition: the worst outcome decides its status and reason,
// the message lists every branch.
func ReverseSynced(ws *WriteBackStatus) *metav1.Condition {
	if ws == nil || len(ws.Results) == 0 {
		return nil
	}
	worst := ws.Results[0]
	var parts []string
	for _, p := range ws.Results {
		if outcomeRank(p.Outcome) > outcomeRank(worst.Outcome) {
			worst = p
		}
		part := p.Outcome
		if p.Action != "" {
			part = fmt.Sprintf("%s: %s", p.Action, p.Outcome)
		}
		if p.Branch != "" {
			part += fmt.Sprintf(" branch %s", p.Branch)
		}
		if p.Commit != "" {
			part += fmt.Sprintf(" at %s", shortSHA(p.Commit))
		}
		if p.PullRequest != "" {
			part += fmt.Sprintf(", pull request %s", p.PullRequest)
		}
		if p.Reason != "" && (p.Branch == "" || (p.Outcome != refluxv1.BranchPushedReason && p.Outcome != refluxv1.UpToDateReason)) {
			part += ": " + p.Reason
		}
		parts = append(parts, part)
	}
	status := metav1.ConditionTrue
	if outcomeRank(worst.Outcome) > outcomeRank(refluxv1.UpToDateReason) {
		status = metav1.ConditionFalse
	}
	return &metav1.Condition{Type: refluxv1.ReverseSyncedCondition, Status: status, Reason: worst.Outcome,
		Message: strings.Join(parts, "; ")}
}

// outcomeRank orders outcomes from best to worst.
func outcomeRank(o string) int {
	switch o {
	case refluxv1.BranchPushedReason:
		return 0
	case refluxv1.UpToDateReason:
		return 1
	case refluxv1.ReportOnlyReason:
		return 2
	case refluxv1.RefusedReason:
		return 3
	case refluxv1.ConflictReason, refluxv1.PullRequestFailedReason:
		return 4
	default: // GitError and anything unknown
		return 5
	}
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// writeBackEvents emits an event per branch that changed or failed, with
// the revision, branch and commit as metadata for notification-controller.
func (gv *Governor) writeBackEvents(snap snapshot, results []reverse.BranchResult) {
	if gv.opts.Events == nil {
		return
	}
	for _, p := range results {
		if p.Outcome == refluxv1.UpToDateReason || p.Outcome == refluxv1.ReportOnlyReason {
			continue // nothing happened worth a notification
		}
		eventType := corev1.EventTypeNormal
		if outcomeRank(p.Outcome) > outcomeRank(refluxv1.ReportOnlyReason) {
			eventType = corev1.EventTypeWarning
		}
		meta := map[string]string{eventMetaKey("revision"): snap.gov.Kustomization.Status.LastAppliedRevision}
		if p.Commit != "" {
			meta[eventMetaKey("reflux-commit")] = p.Commit
		}
		if p.Branch != "" {
			meta[eventMetaKey("reflux-branch")] = p.Branch
		}
		if p.PullRequest != "" {
			meta[eventMetaKey("reflux-pull-request")] = p.PullRequest
		}
		msg := fmt.Sprintf("%s write-back %s", p.Action, p.Outcome)
		if p.Branch != "" {
			msg += " on " + p.Branch
		}
		if p.Reason != "" {
			msg += ": " + p.Reason
		}
		if p.PullRequest != "" && !strings.Contains(msg, p.PullRequest) {
			msg += " (pull request " + p.PullRequest + ")"
		}
		gv.opts.Events.AnnotatedEventf(snap.gov.Kustomization, meta, eventType, p.Outcome, "%s", msg)
	}
}

// deletedBranchEvents says which branches reflux deleted because their
// pull request was closed unmerged, so the next drift's new pull request
// is no surprise.
func (gv *Governor) deletedBranchEvents(snap snapshot, deleted []reverse.BranchResult) {
	if gv.opts.Events == nil {
		return
	}
	for _, p := range deleted {
		meta := map[string]string{eventMetaKey("revision"): snap.gov.Kustomization.Status.LastAppliedRevision,
			eventMetaKey("reflux-branch"): p.Branch, eventMetaKey("reflux-commit"): p.Commit}
		if p.PullRequest != "" {
			meta[eventMetaKey("reflux-pull-request")] = p.PullRequest
		}
		gv.opts.Events.AnnotatedEventf(snap.gov.Kustomization, meta, corev1.EventTypeNormal, BranchDeletedEventReason,
			"branch %s deleted: pull request %s was closed without merging", p.Branch, p.PullRequest)
	}
}
