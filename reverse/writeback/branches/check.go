package branches

import (
	"context"
	"errors"
	"fmt"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// Check lists the Kustomization's reflux branches. Merged branches
// whose records no longer wait on them are deleted, and so are branches
// whose pull request a reviewer closed unmerged; a record whose branch
// reflux pushed is gone and unmerged, or whose pull request is closed, was
// closed by a reviewer. The remote
// branches and the records are the only truth: nothing is remembered.
func (h *Writer) Check(ctx context.Context, set reverse.DriftSet) (reverse.BranchCheck, error) {
	var out reverse.BranchCheck
	b := h.Git
	if set.Policy == nil || set.Policy.Spec.Git.ReportOnly || set.Source == nil || set.Source.Branch == "" {
		return out, nil
	}
	auth, err := git.NewAuth(set.Source.URL, set.Source.AuthData)
	if err != nil {
		return out, fmt.Errorf("GitRepository credentials: %w", err)
	}
	repo := writeback.Repo{URL: set.Source.URL, Auth: auth}
	prefix := set.Policy.Spec.Git.BranchPrefix
	if prefix == "" {
		prefix = branch.DefaultPrefix
	}
	states, err := b.ListBranches(ctx, repo, prefix, set.Source.Branch)
	if err != nil {
		return out, err
	}
	// A branch an open record names (pushed, or about to be) is waited on.
	waiting := map[string]bool{}
	for _, r := range set.Records {
		if r.Status.Branch != "" {
			waiting[r.Status.Branch] = true
		}
	}
	fg, err := h.connect(ctx, set)
	prs := &pullRequests{forge: fg, seen: map[string]forge.PullRequest{}}
	if err != nil {
		// A forge that cannot be reached is no reason to stop the branch
		// clean-up Git alone decides: go on without its word, as for a
		// refused token. Write, which needs it, reports it and backs off.
		prs.unheard = fmt.Errorf("%w: %w", errForge, err)
	}
	present := map[string]bool{}
	slug := set.Kustomization.Namespace + "-" + set.Kustomization.Name
	var errs []error
	for _, st := range states {
		info, err := branch.Parse(prefix, st.Name)
		if err != nil || info.Slug != slug {
			continue
		}
		present[st.Name] = true
		pr := prs.of(ctx, st.Name)
		if pr.Stale(st.Commit, proposals(set.Records, st.Name)...) {
			// Closed or merged for an earlier branch of this name: the
			// branch now carries a drift nobody has decided.
			pr = forge.PullRequest{}
			prs.seen[st.Name] = pr
		}
		switch {
		case pr.State == forge.Merged || pr.State == forge.Closed:
			// A squash or rebase merge leaves the branch unmerged in Git's
			// eyes: the forge's answer is the one that counts. Records of a
			// merged pull request resolve once Flux applies the merge.
			res := reverse.BranchResult{Branch: st.Name, Commit: st.Commit, PullRequest: pr.URL, PullRequestState: string(pr.State)}
			out.PullRequests = append(out.PullRequests, res)
			if pr.State != forge.Closed {
				// Merged on the forge, and the forge left the branch (no
				// auto-delete): once no open record waits on it, it is
				// reflux's to delete, as a branch Git sees merged is.
				if waiting[st.Name] {
					continue
				}
				// Leased on the commit just listed, as for a closed one:
				// a Stale pull request was filtered out above.
				switch err := b.DeleteClosed(ctx, repo, prefix, set.Source.Branch, st.Name, st.Commit); {
				case errors.Is(err, writeback.ErrMoved):
					// Pushed to after the merge: not reflux's to drop.
				case err != nil:
					errs = append(errs, err)
				default:
					out.Deleted = append(out.Deleted, st.Name)
				}
				continue
			}
			// A closed pull request decided its branch: left in place, the
			// next drift would land on it, unseen behind the closed pull
			// request. Its records are dismissed below either way; the
			// ones pushed onto it after the close are taken off it first,
			// to be written again.
			if err := h.withdrawLate(ctx, set, st.Name, pr); err != nil {
				errs = append(errs, err)
				continue
			}
			if !pr.HeadIs(st.Commit) {
				// Pushed to since the reviewer closed it: a human's
				// commit is theirs to clean up, and one of reflux's own
				// is rebuilt or retired once no open record needs it.
				continue
			}
			err := b.DeleteClosed(ctx, repo, prefix, set.Source.Branch, st.Name, st.Commit)
			switch {
			case errors.Is(err, writeback.ErrMoved):
				// Someone pushed after the close: theirs to clean up.
			case err != nil:
				errs = append(errs, err)
			default:
				out.DeletedClosed = append(out.DeletedClosed, res)
			}
		case st.Merged() && !waiting[st.Name]:
			if err := b.DeleteMerged(ctx, repo, prefix, set.Source.Branch, st.Name); err != nil && !errors.Is(err, writeback.ErrNotMerged) {
				errs = append(errs, err)
				continue
			}
			out.Deleted = append(out.Deleted, st.Name)
		case !st.Merged() && !waiting[st.Name]:
			// Unmerged, and no open record is on it: everything it
			// proposed was dismissed or resolved (perhaps while reflux was
			// down). A branch proposes exactly its open records, so it is
			// retired like a kind with nothing left to write.
			res, err := h.retireBranch(ctx, set, st, prs)
			if err != nil {
				errs = append(errs, err)
			}
			if res.Outcome != "" {
				out.Retired = append(out.Retired, res)
			}
		case !st.Merged():
			action := refluxv1.MergeAction
			if st.NeedsDecision {
				action = refluxv1.AlertAction
			}
			if pr.URL == "" && prs.forge != nil && prs.unheard == nil {
				// Pushed while the forge refused the token or was down:
				// open it now, at the check's bounded pace.
				if pr, err = h.openMissing(ctx, prs.forge, set, st.Name, st.Commit, action); err != nil {
					prs.unheard = err
				}
			}
			out.Pending = append(out.Pending, reverse.BranchResult{Action: action, Branch: st.Name, Commit: st.Commit,
				Outcome: refluxv1.BranchPushedReason, PullRequest: pr.URL, PullRequestState: string(pr.State)})
		}
	}
	// Only a branch reflux pushed can have been closed: one recorded only
	// as an intent may never have reached the remote. A branch the forge
	// deleted after merging its pull request was merged, not closed.
	for _, r := range set.Records {
		if !decide.BranchPushed(&r) {
			continue
		}
		pr := prs.of(ctx, r.Status.Branch)
		if pr.State == forge.Closed && !closedFor(pr, r) {
			// Closed before the record joined its branch: the reviewer
			// never saw it.
			pr = forge.PullRequest{}
		}
		switch {
		case pr.State == forge.Closed:
			out.Closed = append(out.Closed, reverse.ClosedRecord{Name: r.Name, Reason: refluxv1.ClosedPullRequestClosedReason,
				Message: "pull request " + pr.URL + " was closed without merging"})
		case !present[r.Status.Branch] && pr.State != forge.Merged && prs.unheard == nil:
			// Without the forge's word (it refused the token, or did not
			// answer) a deleted branch may be a merged pull request:
			// dismiss nothing.
			out.Closed = append(out.Closed, reverse.ClosedRecord{Name: r.Name, Reason: refluxv1.ClosedBranchDeletedReason,
				Message: "branch " + r.Status.Branch + " was deleted without being merged"})
		}
	}
	return out, errors.Join(errs...)
}

// withdrawLate takes off branch head, before the check deletes it or
// leaves it to whoever pushed to it, the open records its closed pull
// request pr did not propose: pushed onto the branch after the reviewer's
// close, they were never decided.
func (h *Writer) withdrawLate(ctx context.Context, set reverse.DriftSet, head string, pr forge.PullRequest) error {
	late := unproposed(set.Records, head, pr)
	if len(late) == 0 || set.Withdraw == nil {
		return nil
	}
	why := "its pull request " + pr.URL + " was closed before the record joined it, so the record is written again"
	if err := set.Withdraw(ctx, head, why, late); err != nil {
		return fmt.Errorf("taking %v off %s, whose pull request was closed before they joined it: %w", late, head, err)
	}
	return nil
}

// pullRequests asks the forge once per branch and check.
type pullRequests struct {
	forge Forge
	seen  map[string]forge.PullRequest
	// unheard is why the forge's word is missing: it refused the token,
	// or could not be reached. Write-back reports it, and the check goes
	// on with Git's word alone.
	unheard error
}

// of returns the branch's pull request; the zero value when the policy
// opens none, the branch has none, or the forge's word is unheard.
func (p *pullRequests) of(ctx context.Context, head string) forge.PullRequest {
	if p.forge == nil || p.unheard != nil {
		return forge.PullRequest{}
	}
	if pr, ok := p.seen[head]; ok {
		return pr
	}
	pr, _, err := p.forge.Find(ctx, head)
	if err != nil {
		p.unheard = fmt.Errorf("%w: %w", errForge, err)
		return forge.PullRequest{}
	}
	p.seen[head] = pr
	return pr
}
