package forge

import (
	"context"
	"fmt"
)

// Close closes the newest pull request of branch head without merging
// it, posting comment on it first when comment is not empty, so a
// reviewer sees why reflux withdrew it. A branch with no pull request, or
// whose pull request is merged or closed already, is left alone: Close
// returns that pull request (the zero value when none) and no error.
// Otherwise it returns the pull request with State Closed. When closing
// fails after the comment was posted, the pull request stays open and a
// retry posts the comment again.
func (c *Client) Close(ctx context.Context, head, comment string) (PullRequest, error) {
	pr, err := c.b.find(ctx, head, c.base)
	if err != nil {
		return PullRequest{}, &Error{Op: "finding the pull request of " + head, Err: err}
	}
	if pr == nil {
		return PullRequest{}, nil
	}
	if pr.State != Open {
		return *pr, nil
	}
	if comment != "" {
		if err := c.b.comment(ctx, pr.Number, comment); err != nil {
			return *pr, writing("commenting on pull request "+pr.URL, err)
		}
	}
	if err := c.b.close(ctx, pr.Number); err != nil {
		return *pr, writing("closing pull request "+pr.URL, err)
	}
	pr.State = Closed
	return *pr, nil
}

// Comment posts body on pull request number. An empty body posts
// nothing: every forge refuses an empty comment.
func (c *Client) Comment(ctx context.Context, number int, body string) error {
	if body == "" {
		return nil
	}
	if err := c.b.comment(ctx, number, body); err != nil {
		return writing(fmt.Sprintf("commenting on pull request #%d", number), err)
	}
	return nil
}
