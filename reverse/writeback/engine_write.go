package writeback

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

// write applies the edit on p.parent, commits, and pushes.
func (e *Engine) write(ctx context.Context, c repository.Client, req Request, p plan) (Result, error) {
	res := Result{Branch: p.branch, Commit: p.lease, Base: p.source}
	if err := c.Checkout(p.parent); err != nil {
		return gitError(res, err)
	}
	changed, err := req.Apply(c.Path())
	if err != nil {
		res.Outcome, res.Reason = Conflict, fmt.Sprintf("cannot apply the change on %.12s: %v", p.parent, err)
		return res, nil
	}
	msg, err := e.message(req, p.source)
	if err != nil {
		res.Outcome, res.Reason = Refused, err.Error()
		return res, err
	}
	commit, err := c.Commit(git.CommitRequest{Paths: changed, Message: msg, Signer: req.Signer,
		Author: git.Signature{Name: req.Author.Name, Email: req.Author.Email, When: e.now()}})
	switch {
	case errors.Is(err, git.ErrNoChanges):
		return upToDate(res, p), nil
	case errors.Is(err, git.ErrInvalidPath):
		res.Outcome, res.Reason = Refused, err.Error()
		return res, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	case err != nil:
		return gitError(res, err)
	}
	if err := sourceUnmoved(ctx, c, req.SourceBranch, p.source); errors.Is(err, errRetry) {
		return res, err
	} else if err != nil {
		return gitError(res, err)
	}
	if req.BeforePush != nil {
		if err := req.BeforePush(ctx, p.branch); err != nil {
			res.Outcome, res.Reason = GitError, fmt.Sprintf("recording the write intent: %v", err)
			return res, fmt.Errorf("%w: recording the write intent: %w", ErrGit, err)
		}
	}
	err = c.Push(ctx, git.PushRequest{Branch: p.branch, Hash: commit, Lease: p.lease, Force: p.force})
	if errors.Is(err, git.ErrPushRejected) {
		res.Reason = err.Error()
		return res, fmt.Errorf("%w: %w", errRetry, err)
	}
	if err != nil {
		return gitError(res, err)
	}
	res.Commit, res.Outcome = commit, BranchPushed
	res.Reason = pushedReason(p)
	return res, nil
}

func upToDate(res Result, p plan) Result {
	res.Outcome = UpToDate
	switch {
	case !p.open:
		res.Branch, res.Commit = "", ""
		res.Reason = "the source branch already matches the live state"
	case p.force:
		res.Reason = fmt.Sprintf("the source branch already contains the change; %s is obsolete", p.branch)
	default:
		res.Reason = fmt.Sprintf("%s already has the change", p.branch)
	}
	return res
}

func pushedReason(p plan) string {
	switch {
	case p.force:
		return fmt.Sprintf("rebased %s onto %.12s by re-applying the change", p.branch, p.source)
	case p.open:
		return fmt.Sprintf("added a commit to %s", p.branch)
	default:
		return fmt.Sprintf("created %s from %.12s", p.branch, p.source)
	}
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
		return "", err
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
	return message.Compose(body, trailers)
}

func (e *Engine) propose(ctx context.Context, c repository.Client, req Request, res Result) error {
	if e.proposer == nil {
		return nil
	}
	co, err := c.CommitInfo(res.Commit)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPropose, err)
	}
	title, body, _ := strings.Cut(co.Message, "\n")
	err = e.proposer.Propose(ctx, Proposal{
		RepoURL: req.RepoURL, SourceBranch: req.SourceBranch, Branch: res.Branch, Commit: res.Commit,
		Kustomization: req.Kustomization, Title: title, Body: strings.TrimSpace(body),
		NeedsDecision: req.Kind == KindAlert,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPropose, err)
	}
	return nil
}
