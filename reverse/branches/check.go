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
	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// Check lists the Kustomization's reflux branches. Merged branches
// whose records no longer wait on them are deleted; a record whose branch
// reflux pushed is gone and unmerged was closed by a reviewer. The remote
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
	present := map[string]bool{}
	slug := set.Kustomization.Namespace + "-" + set.Kustomization.Name
	var errs []error
	for _, st := range states {
		info, err := branch.Parse(prefix, st.Name)
		if err != nil || info.Slug != slug {
			continue
		}
		present[st.Name] = true
		switch {
		case st.Merged() && !waiting[st.Name]:
			if err := b.DeleteMerged(ctx, repo, prefix, set.Source.Branch, st.Name); err != nil && !errors.Is(err, writeback.ErrNotMerged) {
				errs = append(errs, err)
				continue
			}
			out.Deleted = append(out.Deleted, st.Name)
		case !st.Merged():
			action := refluxv1.MergeAction
			if st.NeedsDecision {
				action = refluxv1.AlertAction
			}
			out.Pending = append(out.Pending, reverse.BranchResult{Action: action, Branch: st.Name, Commit: st.Commit,
				Outcome: refluxv1.BranchPushedReason})
		}
	}
	// Only a branch reflux pushed can have been closed: one recorded only
	// as an intent may never have reached the remote.
	for _, r := range set.Records {
		if decide.BranchPushed(&r) && !present[r.Status.Branch] {
			out.Closed = append(out.Closed, r.Name)
		}
	}
	return out, errors.Join(errs...)
}
