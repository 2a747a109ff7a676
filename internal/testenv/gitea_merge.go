package testenv

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// errMergeNotReady is Gitea's answer to a merge while it is still checking
// whether the pull request can be merged (HTTP 405, "Please try again
// later"): the check runs in the background after every push.
const errMergeNotReady = "Please try again later"

// Merge merges pull request number of owner/repo as a reviewer would with
// the given style ("merge", "squash", "rebase"), deleting the head branch
// when deleteBranch. It waits out Gitea's mergeability check, as a
// reviewer waits for the button to turn green; any other refusal (a WIP:
// draft, a conflict) is returned at once.
func (g *Gitea) Merge(ctx context.Context, owner, repo string, number int, style string, deleteBranch bool) error {
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", owner, repo, number)
	body := map[string]any{"Do": style, "delete_branch_after_merge": deleteBranch}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := g.API(ctx, http.MethodPost, path, body, nil)
		if err == nil || !strings.Contains(err.Error(), errMergeNotReady) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("merging %s/%s#%d: Gitea still checking mergeability: %w", owner, repo, number, err)
		case <-time.After(200 * time.Millisecond): // polling Gitea's own background check
		}
	}
}
