package propose

import (
	"context"
	"errors"
	"fmt"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// Brancher is what the lifecycle needs of the write-back engine.
type Brancher interface {
	ListBranches(ctx context.Context, repo writeback.Repo, prefix, source string) ([]writeback.BranchState, error)
	DeleteMerged(ctx context.Context, repo writeback.Repo, prefix, source, name string) error
}

var _ reverse.BranchLifecycle = &Handler{}

// Lifecycle lists the Kustomization's reflux branches. Merged branches
// whose records no longer wait on them are deleted; a Proposed record whose
// branch is gone and unmerged was closed by a reviewer. The remote
// branches and the records are the only truth: nothing is remembered.
func (h *Handler) Lifecycle(ctx context.Context, set reverse.DriftSet) (reverse.Lifecycle, error) {
	var out reverse.Lifecycle
	b, ok := h.Writer.(Brancher)
	if !ok || set.Policy == nil || set.Policy.Spec.Git.ReportOnly || set.Source == nil || set.Source.Branch == "" {
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
	waiting := map[string]bool{}
	for _, r := range set.Records {
		if r.Status.State == refluxv1.DriftProposed && r.Status.Branch != "" {
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
			out.Pending = append(out.Pending, reverse.Proposal{Action: action, Branch: st.Name, Commit: st.Commit,
				Outcome: refluxv1.BranchPushedReason})
		}
	}
	for _, r := range set.Records {
		if r.Status.State == refluxv1.DriftProposed && r.Status.Branch != "" && !present[r.Status.Branch] {
			out.Closed = append(out.Closed, r.Name)
		}
	}
	return out, errors.Join(errs...)
}
