package scheduler

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/execute"
)

// Report hands the engine a Kustomization's records, as the reconciler
// listed them from the cache: a write-back or a branch check is queued on
// the repository's worker when one is due.
func (s *Scheduler) Report(id types.NamespacedName, records []refluxv1.Drift) {
	snap, governed := s.opts.Engine.Snapshot(id)
	if !governed {
		return
	}
	s.mu.Lock()
	st := s.stateLocked(id)
	if st.failing {
		s.mu.Unlock()
		return
	}
	if snap.Gov.Policy.Spec.Git.ReportOnly {
		// Nothing goes to Git: say so once, and never queue a run.
		first := st.last == nil || len(st.last.Results) != 1 || st.last.Results[0].Outcome != refluxv1.ReportOnlyReason
		if first {
			st.last = &WriteBackStatus{At: s.now(), Results: []reverse.BranchResult{{Outcome: refluxv1.ReportOnlyReason,
				Reason: "policy is report-only: nothing is written to Git"}}}
		}
		s.mu.Unlock()
		if first {
			s.opts.Notify(id)
		}
		return
	}
	write, check := due(*st, dueOf(snap.Gov, records, s.now()))
	s.mu.Unlock()
	if write || check {
		s.wb.queue(snap.Gov.RepoURL).Add(id)
	}
}

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
	case refluxv1.ConflictReason, refluxv1.PullRequestFailedReason, refluxv1.TokenReadOnlyReason:
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
func (s *Scheduler) writeBackEvents(snap reverse.Snapshot, results []reverse.BranchResult) {
	if s.opts.Events == nil {
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
		meta := map[string]string{execute.MetaKey("revision"): snap.Gov.Kustomization.Status.LastAppliedRevision}
		if p.Commit != "" {
			meta[execute.MetaKey("reflux-commit")] = p.Commit
		}
		if p.Branch != "" {
			meta[execute.MetaKey("reflux-branch")] = p.Branch
		}
		if p.PullRequest != "" {
			meta[execute.MetaKey("reflux-pull-request")] = p.PullRequest
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
		s.opts.Events.AnnotatedEventf(snap.Gov.Kustomization, meta, eventType, p.Outcome, "%s", msg)
	}
}

// deletedBranchEvents says which branches reflux deleted because their
// pull request was closed unmerged, so the next drift's new pull request
// is no surprise.
func (s *Scheduler) deletedBranchEvents(snap reverse.Snapshot, deleted []reverse.BranchResult) {
	if s.opts.Events == nil {
		return
	}
	for _, p := range deleted {
		meta := map[string]string{execute.MetaKey("revision"): snap.Gov.Kustomization.Status.LastAppliedRevision,
			execute.MetaKey("reflux-branch"): p.Branch, execute.MetaKey("reflux-commit"): p.Commit}
		if p.PullRequest != "" {
			meta[execute.MetaKey("reflux-pull-request")] = p.PullRequest
		}
		s.opts.Events.AnnotatedEventf(snap.Gov.Kustomization, meta, corev1.EventTypeNormal, refluxv1.BranchDeletedEventReason,
			"branch %s deleted: pull request %s was closed without merging", p.Branch, p.PullRequest)
	}
}
