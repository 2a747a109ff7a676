package writeback

import (
	"context"
	"errors"
	"fmt"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

// create starts a branch: the change is made on the source head and
// pushed under the request's name.
func (e *Engine) create(ctx context.Context, c repository.Client, req Request, p plan) (Result, error) {
	res := Result{Branch: p.branch, Commit: p.lease, Base: p.source}
	commit, err := e.commitOn(c, req, p.base)
	if errors.Is(err, git.ErrNoChanges) {
		return Result{Base: p.source, Outcome: UpToDate, Reason: "the source branch already matches the live state"}, nil
	}
	if err != nil {
		return stop(res, err)
	}
	if res, err = e.push(ctx, c, req, p, commit, res); err != nil {
		return res, err
	}
	res.Reason = fmt.Sprintf("created %s from %.12s", p.branch, p.source)
	return res, nil
}

// rebuild makes reflux's open branch propose exactly the open drift again:
// the change is made afresh on the source head and replaces the branch.
// Re-running Apply from the source, rather than adding to the branch,
// re-checks every field and drops the edits of records closed since.
func (e *Engine) rebuild(ctx context.Context, c repository.Client, req Request, open git.Ref, src string) (Result, error) {
	res := Result{Branch: open.Name, Commit: open.Hash, Base: src}
	commit, err := e.commitOn(c, req, src)
	if errors.Is(err, git.ErrNoChanges) {
		// Nothing is pushed or deleted here: the caller closes the pull
		// request first, then deletes the branch leased on res.Commit.
		res.Outcome = Obsolete
		res.Reason = fmt.Sprintf("%s proposes nothing the source branch does not already have", open.Name)
		return res, nil
	}
	if err != nil {
		return stop(res, err)
	}
	// The commit differs from the open head in its date at least; only a
	// different tree is worth a push, so an unchanged drift set never
	// churns the branch, restarts included.
	diff, err := c.Diff(open.Hash, commit)
	if err != nil {
		return gitError(res, err)
	}
	if len(diff) == 0 {
		res.Outcome, res.Reason = UpToDate, fmt.Sprintf("%s already proposes the open drift", open.Name)
		return res, nil
	}
	p := plan{branch: open.Name, source: src, base: src, lease: open.Hash, force: true}
	if res, err = e.push(ctx, c, req, p, commit, res); err != nil {
		return res, err
	}
	res.Reason = fmt.Sprintf("rebuilt %s on %.12s from the open drift", open.Name, src)
	return res, nil
}

// commitOn runs Apply on base and commits what it changed with base as
// the parent; git.ErrNoChanges means Apply left base as it was.
func (e *Engine) commitOn(c repository.Client, req Request, base string) (string, error) {
	changed, err := e.applyOn(c, req, base)
	if err != nil {
		return "", err
	}
	return e.commit(c, req, base, changed)
}

// applyOn checks base out and runs Apply on it. A failing Apply is a
// conflict; a path outside the worktree is an invalid request.
func (e *Engine) applyOn(c repository.Client, req Request, base string) ([]string, error) {
	if err := c.Checkout(base); err != nil {
		return nil, err
	}
	changed, err := req.Apply(c.Path())
	if err != nil {
		return nil, conflict(fmt.Sprintf("cannot apply the change on %.12s: %v", base, err))
	}
	return worktreePaths(changed)
}

// commit commits paths on top of the checked-out commit with reflux's
// message; base is the source commit the change was made on.
func (e *Engine) commit(c repository.Client, req Request, base string, paths []string) (string, error) {
	msg, err := e.message(req, base)
	if err != nil {
		return "", err
	}
	commit, err := c.Commit(git.CommitRequest{Paths: paths, Message: msg, Signer: req.Signer,
		Author: git.Signature{Name: req.Author.Name, Email: req.Author.Email, When: e.now()}})
	if errors.Is(err, git.ErrInvalidPath) {
		return "", fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return commit, err
}

// push sends commit to p.branch, leased on p.lease, once the source is
// known not to have moved and the caller has recorded its intent. A lost
// lease asks Run to start over.
func (e *Engine) push(ctx context.Context, c repository.Client, req Request, p plan, commit string, res Result) (Result, error) {
	if err := sourceUnmoved(ctx, c, req.SourceBranch, p.source); err != nil {
		return stop(res, err)
	}
	if req.BeforePush != nil {
		if err := req.BeforePush(ctx, p.branch); errors.Is(err, ErrSuperseded) {
			return stop(res, fmt.Errorf("recording the write intent: %w", err))
		} else if err != nil {
			return gitError(res, fmt.Errorf("recording the write intent: %w", err))
		}
	}
	err := c.Push(ctx, git.PushRequest{Branch: p.branch, Hash: commit, Lease: p.lease, Force: p.force})
	if errors.Is(err, git.ErrPushRejected) {
		res.Reason = err.Error()
		return res, fmt.Errorf("%w: %w", errRetry, err)
	}
	if err != nil {
		return gitError(res, err)
	}
	res.Commit, res.Outcome = commit, BranchPushed
	return res, nil
}

// sourceUnmoved re-reads the source branch just before pushing; if a
// human pushed to it while Apply ran, the run starts over on the new head.
func sourceUnmoved(ctx context.Context, c repository.Client, source, seen string) error {
	if err := c.Fetch(ctx, source); err != nil {
		return err
	}
	now, err := c.Branch(source)
	if err != nil {
		return err
	}
	if now.Hash != seen {
		return fmt.Errorf("%w: %s moved from %.12s to %.12s", errRetry, source, seen, now.Hash)
	}
	return nil
}

func (e *Engine) message(req Request, source string) (string, error) {
	tmpl := e.template
	if req.MessageTemplate != "" {
		// A policy's own template; the trailers below are added whatever
		// it says, so ownership and idempotency never depend on it.
		t, err := message.Parse(req.MessageTemplate)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
		tmpl = t
	}
	body, err := tmpl.Render(message.Data{
		Kustomization: req.Kustomization.String(),
		Kind:          string(req.Kind),
		NeedsDecision: req.Kind == KindAlert,
		SourceBranch:  req.SourceBranch,
		Fingerprint:   req.Fingerprint,
		Fields:        req.Fields,
	})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	trailers := []message.Trailer{
		{Key: message.TrailerFingerprint, Value: req.Fingerprint},
		{Key: message.TrailerKustomization, Value: req.Kustomization.String()},
		{Key: message.TrailerKind, Value: string(req.Kind)},
		{Key: message.TrailerSourceRevision, Value: req.SourceBranch + "@sha1:" + source},
	}
	if req.Kind == KindAlert {
		trailers = append(trailers, message.Trailer{Key: message.TrailerNeedsDecision, Value: "true"})
	}
	trailers = append(trailers, message.Provenance(req.Fields)...)
	msg, err := message.Compose(body, trailers)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return msg, nil
}
