package branches

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// retire takes every edit of reflux's out of the kind's open branch: the
// engine, asked for an empty change, finds a branch of reflux's alone
// obsolete, which is then closed, and takes reflux's commits' work out of
// one a human committed to, leaving theirs. fingerprint picks the branch
// when there are several (its short form names it); why says, in the
// pull request's closing comment, why nothing is left.
func (s *session) retire(ctx context.Context, action refluxv1.Action, fingerprint, why string) (reverse.BranchResult, error) {
	none := func(string) ([]string, error) { return nil, nil }
	req := s.request(action, fingerprint, nil, none)
	res, err := s.h.Git.Run(ctx, req)
	p := reverse.BranchResult{Action: action, Branch: res.Branch, Commit: res.Commit, Outcome: string(res.Outcome), Reason: res.Reason}
	if err != nil {
		return s.failed(p, err)
	}
	switch res.Outcome {
	case writeback.Obsolete:
		return s.close(ctx, p, why)
	case writeback.BranchPushed:
		// A human's branch: their commits stay, reflux's work left it.
		return p, s.handOver(ctx, p, why)
	case writeback.UpToDate:
		return reverse.BranchResult{}, nil // no branch, or nothing of reflux's left on it
	}
	return p, nil
}

// close retires a branch that proposes nothing open: its records are
// taken off it first (set.Withdraw), its pull request is closed with a
// comment saying why, and the branch is deleted, leased on the commit
// reflux last pushed so a push made since is never lost.
func (s *session) close(ctx context.Context, p reverse.BranchResult, why string) (reverse.BranchResult, error) {
	if s.set.Withdraw != nil {
		if err := s.set.Withdraw(ctx, p.Branch, "", openOn(s.set.Records, p.Branch)); err != nil {
			p.Outcome, p.Reason = refluxv1.GitErrorReason, fmt.Sprintf("taking records off %s: %v", p.Branch, err)
			return p, fmt.Errorf("%w: taking records off %s: %w", writeback.ErrGit, p.Branch, err)
		}
	}
	p.Records = nil
	if fg, err := s.forge(ctx); err != nil {
		if !forge.Unauthorized(err) {
			p.Outcome, p.Reason = refluxv1.PullRequestFailedReason, err.Error()
			return p, errors.Join(errForge, err)
		}
	} else if fg != nil {
		pr, err := fg.Close(ctx, p.Branch, closingComment(s.set, p.Branch, why))
		if err != nil && !forge.Unauthorized(err) {
			p.Outcome, p.Reason = refluxv1.PullRequestFailedReason, err.Error()
			return p, errors.Join(errForge, err)
		}
		p.PullRequest, p.PullRequestState = pr.URL, string(pr.State)
	}
	err := s.h.Git.DeleteClosed(ctx, s.repo(), prefixOf(s.set), s.set.Source.Branch, p.Branch, p.Commit)
	switch {
	case errors.Is(err, writeback.ErrMoved):
		// Pushed to since: the next run finds whose it is now.
		p.Outcome, p.Reason = refluxv1.ConflictReason, err.Error()
		return p, nil
	case err != nil:
		p.Outcome, p.Reason = refluxv1.GitErrorReason, err.Error()
		return p, err
	}
	p.Outcome = refluxv1.WithdrawnReason
	p.Reason = "deleted " + p.Branch + ": " + why
	if p.PullRequest != "" {
		p.Reason = "closed pull request " + p.PullRequest + " and " + p.Reason
	}
	s.h.Log.Info("write-back", "kustomization", s.set.Kustomization.Namespace+"/"+s.set.Kustomization.Name,
		"action", p.Action, "outcome", p.Outcome, "branch", p.Branch, "reason", p.Reason)
	return p, nil
}

// handOver tells the pull request of a human's branch that reflux took
// its own edits out: the branch, and the decision, are theirs now.
func (s *session) handOver(ctx context.Context, p reverse.BranchResult, why string) error {
	fg, err := s.forge(ctx)
	if fg == nil || err != nil {
		return nil // no pull requests, or Write reports the forge
	}
	pr, ok, err := fg.Find(ctx, p.Branch)
	if err != nil || !ok || pr.State != forge.Open {
		return err
	}
	body := closingComment(s.set, p.Branch, why) + "\nreflux took its changes out of this branch in " + p.Commit +
		"; the commits left on it are not reflux's, so the branch and this pull request are yours to decide.\n"
	return fg.Comment(ctx, pr.Number, body)
}

// retireBranch retires an unmerged branch no open record is on (Check).
func (h *Writer) retireBranch(ctx context.Context, set reverse.DriftSet, st writeback.BranchState, prs *pullRequests) (reverse.BranchResult, error) {
	s, err := h.session(set)
	if err != nil {
		return reverse.BranchResult{}, err
	}
	if prs.forge != nil && prs.unheard == nil {
		s.fg, s.connected = prs.forge, true // the check's own connection
	}
	info, err := branch.Parse(prefixOf(set), st.Name)
	if err != nil {
		return reverse.BranchResult{}, err
	}
	action := refluxv1.MergeAction
	if info.NeedsDecision {
		action = refluxv1.AlertAction
	}
	return s.retire(ctx, action, info.Short, "no open drift is left on it")
}

// openOn names the open records on branch.
func openOn(records []refluxv1.Drift, branch string) []string {
	var out []string
	for _, r := range records {
		if r.Status.Branch == branch {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

func prefixOf(set reverse.DriftSet) string {
	if p := set.Policy.Spec.Git.BranchPrefix; p != "" {
		return p
	}
	return branch.DefaultPrefix
}

// closingComment says why a pull request proposes nothing any more: each
// record that was on its branch, how it closed and who closed it.
func closingComment(set reverse.DriftSet, branchName, why string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reflux closed this pull request: %s.\n", why)
	var rows []string
	for _, r := range set.Closed {
		if r.Status.Branch != branchName || r.Status.Closed == nil {
			continue
		}
		c := r.Status.Closed
		how := string(r.Status.State) + " (" + c.Reason + ")"
		if c.Message != "" {
			how += ": " + c.Message
		}
		if c.Revision != "" {
			how += " at revision " + c.Revision
		}
		by := c.By
		if by == "" {
			by = "—"
		}
		for _, f := range r.Spec.Fields {
			rows = append(rows, fmt.Sprintf("| %s | `%s` | %s | %s | %s |", cell(objectName(&r)), cell(f.Pointer), cell(how), cell(by),
				c.Time.UTC().Format("2006-01-02 15:04:05Z")))
		}
	}
	if len(rows) == 0 {
		return b.String()
	}
	b.WriteString("\n| Object | Field | Closed | By | When |\n|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n")
	return b.String()
}
