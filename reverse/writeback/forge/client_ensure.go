package forge

import (
	"cmp"
	"context"
	"strings"
)

// Find returns the newest pull request whose head is branch, in any
// state; ok is false when the branch never had one.
func (c *Client) Find(ctx context.Context, head string) (PullRequest, bool, error) {
	pr, err := c.b.find(ctx, head, c.base)
	if err != nil {
		return PullRequest{}, false, &Error{Op: "finding the pull request of " + head, Err: err}
	}
	if pr == nil {
		return PullRequest{}, false, nil
	}
	return *pr, true, nil
}

// Ensure makes sure the branch has one pull request saying what req says.
// An open pull request for the head is reused, whoever opened it: its
// title and body are updated when they changed (the drift set grew),
// missing labels are added and stale Exclusive ones removed. One is
// created only when the head has none, so the same drift seen by several
// Kustomizations, replicas or after a restart makes one pull request. A
// merged or closed one is returned as it is: the branch's fate was
// decided and reflux never reopens it; unless it is Stale, the pull
// request of an earlier branch of the same name, when a new one is opened.
// A closed one that proposed req.Proposals is never Stale: a push after
// the reviewer's close does not undo it.
func (c *Client) Ensure(ctx context.Context, req Request) (Result, error) {
	if cl, ok := c.b.(clipper); ok {
		req.Body = cl.clip(req.Body)
	}
	pr, err := c.b.find(ctx, req.Head, cmp.Or(req.Base, c.base))
	if err != nil {
		return Result{}, &Error{Op: "finding the pull request of " + req.Head, Err: err}
	}
	if pr == nil || pr.Stale(req.Commit, req.Proposals...) {
		return c.create(ctx, req)
	}
	if pr.State != Open {
		return Result{PullRequest: *pr}, nil
	}
	return c.follow(ctx, *pr, req)
}

// clipper is a backend whose forge holds a body only up to a length
// (Azure DevOps refuses a description over 4,000 characters). Ensure
// writes the clipped body and compares the forge's with it, so a long
// body is not written again on every pass.
type clipper interface{ clip(body string) string }

// create opens the pull request of req and decorates it.
func (c *Client) create(ctx context.Context, req Request) (Result, error) {
	created, err := c.b.create(ctx, req)
	if err != nil {
		return Result{}, writing("creating the pull request for "+req.Head, err)
	}
	if err := c.b.decorate(ctx, created.Number, req); err != nil {
		return Result{PullRequest: *created, Created: true},
			writing("labelling pull request "+created.URL, err)
	}
	created.Labels = req.Labels
	return Result{PullRequest: *created, Created: true}, nil
}

// follow brings the open pull request pr in step with req.
func (c *Client) follow(ctx context.Context, pr PullRequest, req Request) (Result, error) {
	res := Result{PullRequest: pr}
	if err := c.retitle(ctx, &res, req); err != nil {
		return res, err
	}
	if err := c.relabel(ctx, &res, req); err != nil {
		return res, err
	}
	return res, nil
}

// retitle updates the title and body of res when req changed them. A
// reviewer who took a draft out of draft decided it is ready: where the
// forge marks drafts in the title (Gitea's "WIP: ", GitLab's "Draft: "),
// a title without the mark keeps it off, or the next write would undo
// their decision and refuse their merge.
func (c *Client) retitle(ctx context.Context, res *Result, req Request) error {
	if mark := c.b.title(Request{Draft: true}); req.Draft && mark != "" && !strings.HasPrefix(res.Title, mark) {
		req.Draft = false
	}
	title := c.b.title(req)
	if res.Title == title && res.Body == req.Body {
		return nil
	}
	if err := c.b.update(ctx, res.Number, title, req.Body); err != nil {
		return writing("updating pull request "+res.URL, err)
	}
	res.Title, res.Body, res.Updated = title, req.Body, true
	return nil
}
