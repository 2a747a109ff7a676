package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// pullRequest is what Gitea's API says of a pull request.
type pullRequest struct {
	Number int    `json:"number"`
	URL    string `json:"html_url"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
}

// mergeFlag merges the flag's pull request as a reviewer would, with
// Gitea deleting the branch, has Flux fetch and apply main at once rather
// than within its intervals, and waits until reflux resolves the record.
func (d *demo) mergeFlag(ctx context.Context) error {
	rec := d.scenario.flagRecord
	number, err := pullNumber(rec.Status.PullRequest)
	if err != nil {
		return err
	}
	if err := d.gitea.Merge(ctx, d.gitea.Username, repoName, number, "merge", true); err != nil {
		return err
	}
	p := &printer{w: d.opts.out}
	p.line("    merged %s in Gitea, deleting branch %s", rec.Status.PullRequest, rec.Status.Branch)
	for _, obj := range []client.Object{d.source, d.kustomization} {
		if err := d.env.Reconcile(ctx, obj); err != nil {
			return err
		}
	}
	p.line("    Flux applied %s", d.kustomization.Status.LastAppliedRevision)
	var resolved *refluxv1.Drift
	err = d.waitFor(ctx, recordTimeout, "waiting for the flag's record to resolve", func(ctx context.Context) error {
		r, err := d.record(ctx, "ConfigMap", flagsName)
		if err != nil {
			return err
		}
		if r.Status.State != refluxv1.DriftResolved {
			return fmt.Errorf("drift/%s is %s", r.Name, stateOf(r))
		}
		resolved = r
		return nil
	})
	if err != nil {
		return err
	}
	var pr pullRequest
	if err := d.gitea.API(ctx, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%d", d.gitea.Username, repoName, number), nil, &pr); err != nil {
		return fmt.Errorf("reading %s: %w", rec.Status.PullRequest, err)
	}
	d.scenario.merged, d.scenario.flagRecord = &pr, resolved
	p.line("    drift/%s is %s; pull request %s is %s (merged=%t)", resolved.Name, resolved.Status.State, pr.URL, pr.State, pr.Merged)
	return nil
}

// pullNumber is the number at the end of a Gitea pull request's URL.
func pullNumber(url string) (int, error) {
	i := strings.LastIndex(url, "/pulls/")
	if i < 0 {
		return 0, fmt.Errorf("%q is not a Gitea pull request URL", url)
	}
	n, err := strconv.Atoi(url[i+len("/pulls/"):])
	if err != nil {
		return 0, fmt.Errorf("%q is not a Gitea pull request URL: %w", url, err)
	}
	return n, nil
}

// mergeLogs are the logs that say why a merge did not resolve: Gitea's,
// Flux's and reflux's.
func (d *demo) mergeLogs() []string {
	return append(append(d.giteaLogs(), d.fluxLogs()...), d.refluxLogs()...)
}
