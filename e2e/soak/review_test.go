package soak

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// reviewed is a tenant kept for one reviewer action: one flag on
// cm-0000 has become a pull request before the load begins, and the
// reviewer acts on it mid-flight.
type reviewed struct {
	*tenant
	action review
	branch string
	pr     int
	// human is the reviewer's commit on reflux's branch (human-push).
	human string
	done  bool
}

// reviewInterval is how often Flux reconciles a reviewed tenant, which
// drives reflux's checks of its branch and pull request, unless the soak
// paces Flux.
const reviewInterval = 5 * time.Second

// prepareReview creates the tenant of action and waits until reflux has
// opened a pull request for a flag added live.
func (w *world) prepareReview(ctx context.Context, action review, paced bool) (*reviewed, error) {
	interval := reviewInterval
	if paced {
		interval = 0
	}
	t, err := w.newTenant(ctx, "review-"+string(action), 4, interval)
	if err != nil {
		return nil, err
	}
	return &reviewed{tenant: t, action: action}, nil
}

// propose adds flag REVIEW_<n> to cm-0000 and waits for its record to
// name a pull request.
func (r *reviewed) propose(ctx context.Context, n int) error {
	if err := setFlag(ctx, r.Name, fmt.Sprintf("REVIEW_%d", n)); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		rec, err := recordOf(ctx, r.Name, objectName(0))
		if err != nil || rec == nil || rec.Status.PullRequest == "" || rec.Status.Commit == "" {
			return false, nil
		}
		i := strings.LastIndex(rec.Status.PullRequest, "/")
		r.pr, err = strconv.Atoi(rec.Status.PullRequest[i+1:])
		r.branch = rec.Status.Branch
		return err == nil, err
	})
}

// setFlag adds key to cm-0000 of ns as kubectl edit does.
func setFlag(ctx context.Context, ns, key string) error {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: objectName(0)}, cm); err != nil {
		return err
	}
	cm.Data[key] = "on"
	return env.Client.Update(ctx, cm, client.FieldOwner(editor))
}

// recordOf is the one record of ConfigMap name in ns, nil when none.
func recordOf(ctx context.Context, ns, name string) (*refluxv1.Drift, error) {
	list := &refluxv1.DriftList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var found []refluxv1.Drift
	for _, d := range list.Items {
		if d.Spec.Object.Kind == "ConfigMap" && d.Spec.Object.Name == name && d.Status.Closed == nil {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	}
	return nil, fmt.Errorf("%d open records of %s/%s", len(found), ns, name)
}

// act is the reviewer's action.
func (w *world) act(ctx context.Context, r *reviewed) error {
	owner := w.gt.Username
	var err error
	switch r.action {
	case reviewMerge:
		err = w.gt.Merge(ctx, owner, r.Name, r.pr, "merge", true)
	case reviewClose:
		err = w.gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/%s/%s/pulls/%d", owner, r.Name, r.pr), map[string]any{"state": "closed"}, nil)
	case reviewDelete:
		_, err = git("", "push", "-q", w.repoURL(r.Name), "--delete", r.branch)
	case reviewPush:
		if r.human, err = w.humanPush(r); err == nil {
			// reflux must now write onto the branch the human wrote to.
			err = setFlag(ctx, r.Name, "REVIEW_2")
		}
	default:
		err = fmt.Errorf("unknown review %q", r.action)
	}
	r.done = err == nil
	return err
}

// humanPush commits a note onto reflux's branch as a reviewer and pushes
// it, returning the commit.
func (w *world) humanPush(r *reviewed) (string, error) {
	dir, err := os.MkdirTemp("", "soak-reviewer-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // scratch space
	if _, err := git("", "clone", "-q", "-b", r.branch, w.repoURL(r.Name), dir); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "REVIEW.md"), []byte("Reviewed: keep REVIEW_1.\n"), 0o644); err != nil {
		return "", err
	}
	id := []string{"-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.com"}
	if _, err := git(dir, "add", "REVIEW.md"); err != nil {
		return "", err
	}
	if _, err := git(dir, append(id, "commit", "-q", "-m", "review note")...); err != nil {
		return "", err
	}
	if _, err := git(dir, "push", "-q", "origin", r.branch); err != nil {
		return "", err
	}
	return git(dir, "rev-parse", "HEAD")
}

// pr is a pull request as Gitea lists it.
type pr struct {
	Number int    `json:"number"`
	State  string `json:"state"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// pulls lists every pull request of a repository.
func (w *world) pulls(ctx context.Context, repo string) ([]pr, error) {
	var all []pr
	for page := 1; ; page++ {
		var batch []pr
		path := fmt.Sprintf("/repos/%s/%s/pulls?state=all&limit=50&page=%d", w.gt.Username, repo, page)
		if err := w.gt.API(ctx, http.MethodGet, path, nil, &batch); err != nil {
			return nil, err
		}
		all = append(all, batch...)
		if len(batch) < 50 {
			return all, nil
		}
	}
}

// checkReview returns what breaks the reviewer's action's promise, or
// nil: once merged, the record is resolved; closed or deleted, it is
// closed and its branch never pushed again; a human's commit stays in
// the branch's history, with reflux's next change on top.
func (w *world) checkReview(ctx context.Context, r *reviewed, c *clone, prs []pr) error {
	if !r.done {
		return nil
	}
	rec, err := recordOf(ctx, r.Name, objectName(0))
	if err != nil {
		return err
	}
	open := 0
	for _, p := range prs {
		if p.Head.Ref == r.branch && p.State == "open" {
			open++
		}
	}
	switch r.action {
	case reviewMerge, reviewClose, reviewDelete:
		var errs []error
		// Merging deleted the branch (delete_branch_after_merge), and so
		// did the reviewer; a closed pull request's branch may stay, but
		// nothing may open it again.
		if r.action != reviewClose && c.has(r.branch) {
			errs = append(errs, fmt.Errorf("%s: branch %s is there again after the reviewer's %s", r.Name, r.branch, r.action))
		}
		if open > 0 && r.action != reviewDelete {
			errs = append(errs, fmt.Errorf("%s: %d open pull requests for %s after the reviewer's %s", r.Name, open, r.branch, r.action))
		}
		if rec != nil && rec.Status.Branch == r.branch {
			errs = append(errs, fmt.Errorf("%s: the record is still open (%s) on %s after the reviewer's %s", r.Name, rec.Status.State, r.branch, r.action))
		}
		return errors.Join(errs...)
	case reviewPush:
		switch {
		case !c.has(r.branch):
			return fmt.Errorf("%s: branch %s with the human's commit is gone", r.Name, r.branch)
		case !c.isAncestor(r.human, r.branch):
			return fmt.Errorf("%s: the human's commit %s is no longer in %s: force-pushed over", r.Name, r.human, r.branch)
		case open > 1:
			return fmt.Errorf("%s: %d open pull requests for %s", r.Name, open, r.branch)
		}
		flags, err := git(c.dir, "show", "origin/"+r.branch+":objects-000.yaml")
		if err != nil {
			return err
		}
		if !strings.Contains(flags, "REVIEW_2") {
			return fmt.Errorf("%s: REVIEW_2, added after the human's push, is not on %s yet", r.Name, r.branch)
		}
	}
	return nil
}
