package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// errMergeNotReady is Gitea's answer to a merge while it is still checking
// whether the pull request can be merged (HTTP 405, "Please try again
// later"): the check runs in the background after every push.
const errMergeNotReady = "Please try again later"

// mergeTimeout bounds one Merge, and one write through API. A merge is a
// git operation on Gitea's side, which on a loaded two-core machine
// outlasts the 10 s that a health check is given.
const mergeTimeout = 2 * time.Minute

// Merge merges pull request number of owner/repo as a reviewer would with
// the given style ("merge", "squash", "rebase"), deleting the head branch
// when deleteBranch. It waits out Gitea's mergeability check, as a
// reviewer waits for the button to turn green; any other refusal (a WIP:
// draft, a conflict) is returned at once.
//
// Merge is idempotent: when the answer is lost (a timeout while Gitea
// went on merging) or the pull request is already merged, the pull
// request's own state decides, and the head branch is deleted if Gitea
// did not get that far. A retry therefore never fails on a merge that
// happened.
func (g *Gitea) Merge(ctx context.Context, owner, repo string, number int, style string, deleteBranch bool) error {
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", owner, repo, number)
	body := map[string]any{"Do": style, "delete_branch_after_merge": deleteBranch}
	ctx, cancel := context.WithTimeout(ctx, mergeTimeout)
	defer cancel()
	for {
		err := g.call(ctx, g.slow, http.MethodPost, path, body, nil)
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), errMergeNotReady) {
			return g.mergedAnyway(ctx, owner, repo, number, deleteBranch, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("merging %s/%s#%d: Gitea still checking mergeability: %w", owner, repo, number, err)
		case <-time.After(200 * time.Millisecond): // polling Gitea's own background check
		}
	}
}

// mergedAnyway answers a failed merge call from the pull request's state:
// nil when it is merged (finishing the branch deletion), mergeErr when
// it is not.
func (g *Gitea) mergedAnyway(ctx context.Context, owner, repo string, number int, deleteBranch bool, mergeErr error) error {
	var pr struct {
		Merged bool `json:"merged"`
		Head   struct {
			Ref string `json:"ref"`
		} `json:"head"`
	}
	// The merge call may have used up ctx; the check gets a short budget
	// of its own so that a lost answer is still looked up.
	check, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := g.call(check, g.slow, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%d", owner, repo, number), nil, &pr); err != nil {
		return errors.Join(mergeErr, fmt.Errorf("looking up whether it merged: %w", err))
	}
	if !pr.Merged {
		return mergeErr
	}
	if !deleteBranch {
		return nil
	}
	err := g.call(check, g.slow, http.MethodDelete, fmt.Sprintf("/repos/%s/%s/branches/%s", owner, repo, url.PathEscape(pr.Head.Ref)), nil, nil)
	if err != nil && !strings.Contains(err.Error(), "404") {
		return fmt.Errorf("merged %s/%s#%d, deleting its branch %s: %w", owner, repo, number, pr.Head.Ref, err)
	}
	return nil
}
