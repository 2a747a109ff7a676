package writeback

import (
	"context"
	"errors"
	"fmt"

	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
)

// Repo identifies a repository for the branch lifecycle helpers.
type Repo struct {
	URL  string
	Auth *git.AuthOptions
}

// MergedBy says how a branch's change reached the source branch.
type MergedBy string

const (
	// NotMerged means the source branch lacks the change.
	NotMerged MergedBy = ""
	// MergedAncestor means the branch head is in the source history
	// (merge commit or fast-forward).
	MergedAncestor MergedBy = "ancestor"
	// MergedContent means every file the branch changed has the same
	// content in the source branch (squash or rebase merge).
	MergedContent MergedBy = "content"
)

// BranchState describes one reflux branch on the remote.
type BranchState struct {
	Name          string
	Commit        string
	NeedsDecision bool
	MergedBy      MergedBy
}

// Merged reports whether the branch's change is in the source branch.
func (s BranchState) Merged() bool {
	return s.MergedBy != NotMerged
}

// ListBranches lists reflux's branches under prefix on the remote and
// whether each one's change has reached source.
func (e *Engine) ListBranches(ctx context.Context, repo Repo, prefix, source string) ([]BranchState, error) {
	if err := branch.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	c, unlock, err := e.checkout(ctx, repo.URL, repo.Auth, source, prefix)
	if err != nil {
		return nil, err
	}
	defer unlock()
	src, err := sourceHead(c, source)
	if err != nil {
		return nil, err
	}
	refs, err := c.Branches(prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGit, err)
	}
	var out []BranchState
	for _, ref := range refs {
		info, err := branch.Parse(prefix, ref.Name)
		if err != nil || ref.Name == source {
			continue
		}
		by, err := mergedBy(c, ref.Hash, src)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrGit, err)
		}
		out = append(out, BranchState{Name: ref.Name, Commit: ref.Hash, NeedsDecision: info.NeedsDecision, MergedBy: by})
	}
	return out, nil
}

// DeleteMerged deletes a reflux branch whose change is in the source
// branch. A branch that is already gone is not an error; one that is not
// merged yields ErrNotMerged, and one outside prefix a branch sentinel.
func (e *Engine) DeleteMerged(ctx context.Context, repo Repo, prefix, source, name string) error {
	return e.deleteBranch(ctx, repo, prefix, source, name, func(c repository.Client, ref git.Ref) error {
		src, err := sourceHead(c, source)
		if err != nil {
			return err
		}
		by, err := mergedBy(c, ref.Hash, src)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrGit, err)
		}
		if by == NotMerged {
			return fmt.Errorf("%w: %s into %s", ErrNotMerged, name, source)
		}
		return nil
	})
}

// DeleteClosed deletes a reflux branch whose pull request a reviewer
// decided: closed without merging, so that the next drift of its
// Kustomization starts a fresh branch and pull request instead of landing
// on a decided one, or merged by the forge (a squash or rebase merge that
// Git does not see) and left in place. Only the commit the reviewer
// decided on is deleted: a branch that moved since yields ErrMoved, and
// one already gone is not an error.
func (e *Engine) DeleteClosed(ctx context.Context, repo Repo, prefix, source, name, commit string) error {
	return e.deleteBranch(ctx, repo, prefix, source, name, func(_ repository.Client, ref git.Ref) error {
		if ref.Hash != commit {
			return fmt.Errorf("%w: %s is at %.12s, not %.12s", ErrMoved, name, ref.Hash, commit)
		}
		return nil
	})
}

// deleteBranch deletes the reflux branch name once may agrees, leased on
// the head may saw.
func (e *Engine) deleteBranch(ctx context.Context, repo Repo, prefix, source, name string,
	may func(repository.Client, git.Ref) error) error {
	if err := branch.Check(prefix, source, name); err != nil {
		return err
	}
	c, unlock, err := e.checkout(ctx, repo.URL, repo.Auth, source, prefix)
	if err != nil {
		return err
	}
	defer unlock()
	ref, err := c.Branch(name)
	if errors.Is(err, git.ErrBranchNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGit, err)
	}
	if err := may(c, ref); err != nil {
		return err
	}
	// The lease makes this a no-op failure if someone pushed since.
	if err := c.Delete(ctx, name, ref.Hash); err != nil {
		return fmt.Errorf("%w: %w", ErrGit, err)
	}
	return nil
}

func sourceHead(c repository.Client, source string) (string, error) {
	ref, err := c.Branch(source)
	if errors.Is(err, git.ErrBranchNotFound) {
		return "", fmt.Errorf("%w: %s", ErrSourceNotFound, source)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrGit, err)
	}
	return ref.Hash, nil
}

// mergedBy detects a merge by ancestry, or by content for squash and
// rebase merges where the branch's commits never reach the source.
func mergedBy(c repository.Client, head, src string) (MergedBy, error) {
	if ok, err := c.IsAncestor(head, src); err != nil || ok {
		return MergedAncestor, err
	}
	base, err := c.MergeBase(head, src)
	if err != nil || base == "" {
		return NotMerged, err
	}
	files, err := c.Diff(base, head)
	if err != nil {
		return NotMerged, err
	}
	for _, f := range files {
		want, err := c.FileHash(head, f)
		if err != nil {
			return NotMerged, err
		}
		got, err := c.FileHash(src, f)
		if err != nil {
			return NotMerged, err
		}
		if got != want {
			return NotMerged, nil
		}
	}
	return MergedContent, nil
}
