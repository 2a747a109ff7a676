package forge

import (
	"context"
	"slices"
)

// Find returns the newest pull request whose head is branch, in any
// state; ok is false when the branch never had one.
func (c *Client) Find(ctx context.Context, head string) (PullRequest, bool, error) {
	pr, err := c.b.find(ctx, head)
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
// title and body are updated when they changed (the drift set grew) and
// missing labels are added. One is created only when the head has none,
// so the same drift seen by several Kustomizations, replicas or after a
// restart makes one pull request. A merged or closed one is returned
// as it is: the branch's fate was decided and reflux never reopens it;
// unless it is Stale, the pull request of an earlier branch of the same
// name, when a new one is opened.
func (c *Client) Ensure(ctx context.Context, req Request) (Result, error) {
	pr, err := c.b.find(ctx, req.Head)
	if err != nil {
		return Result{}, &Error{Op: "finding the pull request of " + req.Head, Err: err}
	}
	if pr == nil || pr.Stale(req.Commit) {
		created, err := c.b.create(ctx, req)
		if err != nil {
			return Result{}, &Error{Op: "creating the pull request for " + req.Head, Err: err}
		}
		if err := c.b.decorate(ctx, created.Number, req); err != nil {
			return Result{PullRequest: *created, Created: true},
				&Error{Op: "labelling pull request " + created.URL, Err: err}
		}
		created.Labels = req.Labels
		return Result{PullRequest: *created, Created: true}, nil
	}
	res := Result{PullRequest: *pr}
	if pr.State != Open {
		return res, nil
	}
	if title := c.b.title(req); pr.Title != title || pr.Body != req.Body {
		if err := c.b.update(ctx, pr.Number, title, req.Body); err != nil {
			return res, &Error{Op: "updating pull request " + pr.URL, Err: err}
		}
		res.Title, res.Body, res.Updated = title, req.Body, true
	}
	if missing := missingLabels(pr.Labels, req.Labels); len(missing) > 0 {
		if err := c.b.decorate(ctx, pr.Number, Request{Labels: missing}); err != nil {
			return res, &Error{Op: "labelling pull request " + pr.URL, Err: err}
		}
		res.Labels, res.Updated = append(slices.Clone(pr.Labels), missing...), true
	}
	return res, nil
}

func missingLabels(have, want []string) []string {
	var out []string
	for _, l := range want {
		if !slices.Contains(have, l) {
			out = append(out, l)
		}
	}
	return out
}
