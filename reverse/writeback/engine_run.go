package writeback

import (
	"context"
	"errors"
	"fmt"

	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
)

// errRetry asks Run to fetch and start over: the source branch moved under
// us, or the push lost a race.
var errRetry = errors.New("retry")

// Run performs one write-back. The error is nil for BranchPushed,
// UpToDate, Conflict and Refused-by-ownership outcomes; it wraps ErrGit
// for GitError (retry later) and ErrInvalidRequest or a branch sentinel
// for requests that can never succeed.
func (e *Engine) Run(ctx context.Context, req Request) (Result, error) {
	req = req.withDefaults()
	name, err := e.branchFor(req)
	if err != nil {
		return Result{Outcome: Refused, Reason: err.Error()}, err
	}
	c, unlock, err := e.checkout(ctx, req.RepoURL, req.Auth, req.SourceBranch, req.BranchPrefix)
	if err != nil {
		return gitError(Result{Branch: name}, err)
	}
	defer unlock()

	var res Result
	for attempt := 1; ; attempt++ {
		res, err = e.attempt(ctx, c, req, name)
		if !errors.Is(err, errRetry) {
			break
		}
		if attempt == e.maxAttempts {
			return gitError(res, fmt.Errorf("giving up after %d attempts: %w", attempt, err))
		}
		if err := c.Fetch(ctx, req.SourceBranch, req.BranchPrefix); err != nil {
			return gitError(res, err)
		}
	}
	if err == nil && res.Branch != "" && (res.Outcome == BranchPushed || res.Outcome == UpToDate) {
		err = e.propose(ctx, c, req, res)
	}
	return res, err
}

func (e *Engine) branchFor(req Request) (string, error) {
	if err := req.validate(); err != nil {
		return "", err
	}
	name, err := branch.Name(req.spec())
	if err != nil {
		return "", err
	}
	if err := branch.Check(req.BranchPrefix, req.SourceBranch, name); err != nil {
		return "", err
	}
	return name, nil
}

// plan is where a run commits and how it pushes.
type plan struct {
	branch string
	source string // source branch head the change is based on
	parent string // commit Apply runs on
	lease  string // remote branch value the push expects; "" = absent
	force  bool   // rewrite reflux's own branch onto a moved source
	open   bool   // an open reflux branch existed
}

func (e *Engine) attempt(ctx context.Context, c repository.Client, req Request, name string) (Result, error) {
	src, err := c.Branch(req.SourceBranch)
	if errors.Is(err, git.ErrBranchNotFound) {
		err = fmt.Errorf("%w: %s", ErrSourceNotFound, req.SourceBranch)
		return Result{Outcome: Refused, Reason: err.Error()}, err
	}
	if err != nil {
		return gitError(Result{}, err)
	}
	found, err := e.findOpen(c, req, name, src.Hash)
	if err != nil {
		return gitError(Result{Branch: name, Base: src.Hash}, err)
	}
	if found.open == nil {
		return e.write(ctx, c, req, plan{branch: name, source: src.Hash, parent: src.Hash, lease: found.staleLease})
	}
	open := found.open
	foreign, err := e.foreign(c, found.chain, req, src.Hash)
	if err != nil {
		return gitError(Result{Branch: open.Name, Base: src.Hash}, err)
	}
	if foreign != "" {
		return Result{Branch: open.Name, Commit: open.Hash, Base: src.Hash, Outcome: Refused,
			Reason: fmt.Sprintf("branch %s carries %s; reflux will not rewrite it", open.Name, foreign)}, nil
	}
	upToDate, err := c.IsAncestor(src.Hash, open.Hash)
	if err != nil {
		return gitError(Result{Branch: open.Name, Base: src.Hash}, err)
	}
	p := plan{branch: open.Name, source: src.Hash, parent: open.Hash, lease: open.Hash, open: true}
	if !upToDate {
		// The source moved: rebase by re-applying the edit on the new head
		// rather than replaying old commits, so Apply re-checks every field.
		p.parent, p.force = src.Hash, true
	}
	return e.write(ctx, c, req, p)
}

func gitError(res Result, err error) (Result, error) {
	if !errors.Is(err, ErrGit) {
		err = fmt.Errorf("%w: %w", ErrGit, err)
	}
	res.Outcome, res.Reason = GitError, err.Error()
	return res, err
}
