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
// UpToDate, Obsolete, Conflict and Refused-by-ownership outcomes; it wraps
// ErrSuperseded for Superseded, ErrGit for GitError (retry later) and
// ErrInvalidRequest or a branch sentinel for requests that can never
// succeed.
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

// attempt picks how to write, by what is on the remote: no open branch
// starts one; a branch only reflux wrote is rebuilt from the source head;
// a branch a human committed to gets one commit on top, and keeps the
// human's work.
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
		return e.create(ctx, c, req, plan{branch: name, source: src.Hash, base: src.Hash, lease: found.staleLease})
	}
	open := *found.open
	if found.unwalkable {
		return Result{Branch: open.Name, Commit: open.Hash, Base: src.Hash, Outcome: Refused,
			Reason: fmt.Sprintf("branch %s has no common history with %s within %d commits; reflux will not rewrite it",
				open.Name, req.SourceBranch, maxChain)}, nil
	}
	human, err := e.humanCommits(c, found.chain, req, src.Hash)
	if err != nil {
		return gitError(Result{Branch: open.Name, Commit: open.Hash, Base: src.Hash}, err)
	}
	if len(human) == 0 {
		return e.rebuild(ctx, c, req, open, src.Hash)
	}
	return e.keep(ctx, c, req, open, human, src.Hash)
}

// plan is where a run commits and how it pushes.
type plan struct {
	branch string
	source string // source branch head when the attempt started
	base   string // commit Apply runs on
	lease  string // remote branch value the push expects; "" = absent
	force  bool   // replace reflux's own branch rather than add to it
}

// conflict is a step's answer that the change cannot be made on this
// base. It is not a failure of the run: Run reports Conflict with a nil
// error, and nothing is pushed.
type conflict string

func (c conflict) Error() string { return string(c) }

// stop turns the error of a step into the run's result.
func stop(res Result, err error) (Result, error) {
	var cf conflict
	switch {
	case errors.Is(err, errRetry):
		return res, err
	case errors.As(err, &cf):
		res.Outcome, res.Reason = Conflict, string(cf)
		return res, nil
	case errors.Is(err, git.ErrNotRegularFile):
		// reflux only carries regular files from one commit to another.
		res.Outcome, res.Reason = Conflict, err.Error()
		return res, nil
	case errors.Is(err, ErrSuperseded):
		res.Outcome, res.Reason = Superseded, err.Error()
		return res, err
	case errors.Is(err, ErrInvalidRequest):
		res.Outcome, res.Reason = Refused, err.Error()
		return res, err
	default:
		return gitError(res, err)
	}
}

func gitError(res Result, err error) (Result, error) {
	if !errors.Is(err, ErrGit) {
		err = fmt.Errorf("%w: %w", ErrGit, err)
	}
	res.Outcome, res.Reason = GitError, err.Error()
	return res, err
}
