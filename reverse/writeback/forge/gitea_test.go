package forge_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// giteaPR is what the Gitea API says of a pull request.
type giteaPR struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	RequestedReviewers []struct {
		Login string `json:"login"`
	} `json:"requested_reviewers"`
	Assignees []struct {
		Login string `json:"login"`
	} `json:"assignees"`
}

func (p giteaPR) labels() []string {
	var out []string
	for _, l := range p.Labels {
		out = append(out, l.Name)
	}
	return out
}

// pushBranch commits file=content on top of main and pushes it as branch.
func pushBranch(t *testing.T, gt *testenv.Gitea, url, branch, file, content string) {
	t.Helper()
	dir := t.TempDir()
	r, err := gogit.PlainClone(dir, false, &gogit.CloneOptions{URL: url, Auth: gt.BasicAuth(),
		ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatalf("cloning: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := r.Worktree()
	if _, err := wt.Add(file); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "reflux", Email: "reflux@example.com", When: time.Now()}
	h, err := wt.Commit("reflux: "+branch, &gogit.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(&gogit.PushOptions{Auth: gt.BasicAuth(),
		RefSpecs: []config.RefSpec{config.RefSpec(h.String() + ":refs/heads/" + branch)}}); err != nil {
		t.Fatalf("pushing %s: %v", branch, err)
	}
}

// startFleet starts a Gitea, stopped when t ends, holding the repository
// reflux/fleet with a main branch, and returns it with the repository's
// clone URL.
func startFleet(t *testing.T) (*testenv.Gitea, string) {
	t.Helper()
	return startFleetWith(t, testenv.GiteaOptions{})
}

// startFleetWith is startFleet with Gitea started with opts.
func startFleetWith(t *testing.T, opts testenv.GiteaOptions) (*testenv.Gitea, string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	gt, err := testenv.StartGitea(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := gt.Process.Log(); err == nil {
				t.Logf("gitea log:\n%s", b)
			}
		}
		_ = gt.Stop() // a stop error changes no result
	})
	tree := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(tree, "cm.yaml"), []byte("kind: ConfigMap\n"), 0o644)).To(Succeed())
	url, _, err := gt.PushDir(ctx, "fleet", tree)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		return gt.API(ctx, http.MethodGet, "/repos/reflux/fleet/branches/main", nil, nil)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	return gt, url
}

// TestGiteaPullRequests drives a real Gitea through the whole life of
// reflux's pull requests: opened once with labels and reviewers, reused
// and updated, squash-merged with the branch auto-deleted, closed unmerged,
// and a token the forge refuses.
func TestGiteaPullRequests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, url := startFleet(t)
	g.Expect(gt.AddUser(ctx, "alice", "fleet")).To(Succeed())

	c, err := forge.New(ctx, forge.Options{Provider: "gitea", Token: gt.Token, APIURL: gt.URL, RepoURL: url})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Check(ctx)).To(Succeed())

	head := "reflux/apps-web/needs-decision-0123456789ab"
	pushBranch(t, gt, url, head, "cm.yaml", "kind: ConfigMap\ndata: {color: blue}\n")
	req := forge.Request{Head: head, Base: "main", Title: "reflux: apps/web needs a decision: image", Body: "| one |",
		Labels: []string{"reflux", "needs-decision", "severity/high"}, Draft: true,
		Reviewers: []string{"alice"}, Assignees: []string{"alice"}}
	res, err := c.Ensure(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Created).To(BeTrue())
	g.Expect(res.URL).To(HavePrefix(gt.URL + "/reflux/fleet/pulls/"))

	var pr giteaPR
	g.Expect(gt.API(ctx, http.MethodGet, fmt.Sprintf("/repos/reflux/fleet/pulls/%d", res.Number), nil, &pr)).To(Succeed())
	g.Expect(pr.Title).To(Equal("WIP: "+req.Title), "Gitea reads WIP: as a draft")
	g.Expect(pr.labels()).To(ConsistOf("reflux", "needs-decision", "severity/high"))
	g.Expect(pr.RequestedReviewers).To(ContainElement(HaveField("Login", "alice")))
	g.Expect(pr.Assignees).To(ContainElement(HaveField("Login", "alice")))

	// The drift set grew: same head, new body, one more label. The pull
	// request is reused, never duplicated, also by a second client (a
	// restart or another replica).
	req.Body = "| one |\n| two |"
	req.Labels = append(req.Labels, "severity/critical")
	again, err := forge.New(ctx, forge.Options{Provider: "gitea", Token: gt.Token, APIURL: gt.URL, RepoURL: url})
	g.Expect(err).NotTo(HaveOccurred())
	res2, err := again.Ensure(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res2.Created).To(BeFalse())
	g.Expect(res2.Updated).To(BeTrue())
	g.Expect(res2.Number).To(Equal(res.Number))
	var all []giteaPR
	g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/fleet/pulls?state=all", nil, &all)).To(Succeed())
	g.Expect(all).To(HaveLen(1), "one pull request per branch")
	g.Expect(all[0].Body).To(Equal(req.Body))
	g.Expect(all[0].labels()).To(ContainElement("severity/critical"))
	res3, err := again.Ensure(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res3.Updated).To(BeFalse(), "nothing changed, nothing is sent")

	// A draft cannot be merged as it is: a human decides, drops the WIP:
	// mark, and squash-merges with the head branch deleted: merged, not
	// closed.
	mergeURL := fmt.Sprintf("/repos/reflux/fleet/pulls/%d/merge", res.Number)
	g.Expect(gt.API(ctx, http.MethodPost, mergeURL, map[string]any{"Do": "squash"}, nil)).
		To(MatchError(ContainSubstring("Work in progress PRs cannot be merged")))
	g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/fleet/pulls/%d", res.Number),
		map[string]any{"title": req.Title}, nil)).To(Succeed())
	// reflux writes again (the drift set changed) and leaves the human's
	// decision alone: the body follows, the title stays out of draft.
	req.Body = "| one |\n| two |\n| three |"
	ready, err := again.Ensure(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ready.Updated).To(BeTrue())
	g.Expect(gt.API(ctx, http.MethodGet, fmt.Sprintf("/repos/reflux/fleet/pulls/%d", res.Number), nil, &pr)).To(Succeed())
	g.Expect(pr.Title).To(Equal(req.Title), "still out of draft")
	g.Expect(pr.Body).To(Equal(req.Body))
	g.Expect(gt.Merge(ctx, "reflux", "fleet", int(res.Number), "squash", true)).To(Succeed())
	g.Eventually(func() error {
		return gt.API(ctx, http.MethodGet, "/repos/reflux/fleet/branches/"+head, nil, nil)
	}, 30*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring("404")), "the head branch is deleted")
	found, ok, err := c.Find(ctx, head)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(found.State).To(Equal(forge.Merged))

	// Closed without merging: Closed, and Ensure never reopens it.
	closedHead := "reflux/apps-web/fedcba987654"
	pushBranch(t, gt, url, closedHead, "other.yaml", "kind: ConfigMap\n")
	res4, err := c.Ensure(ctx, forge.Request{Head: closedHead, Base: "main", Title: "reflux: apps/web", Body: "b",
		Labels: []string{"reflux", "severity/low"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/fleet/pulls/%d", res4.Number),
		map[string]any{"state": "closed"}, nil)).To(Succeed())
	found, _, err = c.Find(ctx, closedHead)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found.State).To(Equal(forge.Closed))
	res5, err := c.Ensure(ctx, forge.Request{Head: closedHead, Base: "main", Title: "reflux: apps/web", Body: "b2"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res5.Created).To(BeFalse())
	g.Expect(res5.State).To(Equal(forge.Closed))

	// A token the forge refuses: the answer is quoted and recognised.
	// Gitea's SDK reads the server version with the token as it connects.
	_, err = forge.New(ctx, forge.Options{Provider: "gitea", Token: "not-a-token", APIURL: gt.URL, RepoURL: url})
	g.Expect(err).To(MatchError(ContainSubstring("invalid username, password or token")))
	g.Expect(forge.Unauthorized(err)).To(BeTrue(), "err: %v", err)
}

// giteaComment is what the Gitea API says of a comment.
type giteaComment struct {
	Body string `json:"body"`
}

// TestGiteaFollowsDrift drives a real Gitea through keeping a pull request
// in step with its drift: the labels reflux owns follow the request while
// a human's stay, and the pull request of a drift that is gone is closed,
// unmerged, with a comment that says why.
func TestGiteaFollowsDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, url := startFleet(t)
	c, err := forge.New(ctx, forge.Options{Provider: "gitea", Token: gt.Token, APIURL: gt.URL, RepoURL: url})
	g.Expect(err).NotTo(HaveOccurred())

	head := "reflux/apps-web/0123456789ab"
	pushBranch(t, gt, url, head, "cm.yaml", "kind: ConfigMap\ndata: {color: blue}\n")
	req := forge.Request{Head: head, Base: "main", Title: "reflux: apps/web drifted", Body: "| one |",
		Labels:    []string{"reflux", "needs-decision", "severity/critical"},
		Exclusive: []string{"needs-decision", "severity/"}}
	res, err := c.Ensure(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Created).To(BeTrue())
	prPath := fmt.Sprintf("/repos/reflux/fleet/pulls/%d", res.Number)
	commentsPath := fmt.Sprintf("/repos/reflux/fleet/issues/%d/comments", res.Number)

	// A reviewer adds a label of their own.
	var human struct {
		ID int64 `json:"id"`
	}
	g.Expect(gt.API(ctx, http.MethodPost, "/repos/reflux/fleet/labels",
		map[string]any{"name": "team/web", "color": "#1d76db"}, &human)).To(Succeed())
	g.Expect(gt.API(ctx, http.MethodPost, fmt.Sprintf("/repos/reflux/fleet/issues/%d/labels", res.Number),
		map[string]any{"labels": []int64{human.ID}}, nil)).To(Succeed())

	// The critical drift was reverted and the decision made: what is left
	// is low, and the body changed with it.
	req.Labels, req.Body = []string{"reflux", "severity/low"}, "| two |"
	res2, err := c.Ensure(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res2.Updated).To(BeTrue())
	g.Expect(res2.Labels).To(ConsistOf("reflux", "team/web", "severity/low"))
	var pr giteaPR
	g.Expect(gt.API(ctx, http.MethodGet, prPath, nil, &pr)).To(Succeed())
	g.Expect(pr.labels()).To(ConsistOf("reflux", "team/web", "severity/low"),
		"severity/critical and needs-decision are gone, the human's team/web stays")
	g.Expect(pr.Body).To(Equal("| two |"))
	res3, err := c.Ensure(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res3.Updated).To(BeFalse(), "in step: nothing is sent")

	// The drift is gone: the pull request is closed with a comment.
	const why = "The drift this pull request carried is gone from the cluster."
	closed, err := c.Close(ctx, head, why)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(closed.Number).To(Equal(res.Number))
	g.Expect(closed.State).To(Equal(forge.Closed))
	g.Expect(gt.API(ctx, http.MethodGet, prPath, nil, &pr)).To(Succeed())
	g.Expect(pr.State).To(Equal("closed"))
	g.Expect(pr.Merged).To(BeFalse())
	g.Expect(pr.labels()).To(ConsistOf("reflux", "team/web", "severity/low"), "closing keeps the labels")
	var comments []giteaComment
	g.Expect(gt.API(ctx, http.MethodGet, commentsPath, nil, &comments)).To(Succeed())
	g.Expect(comments).To(Equal([]giteaComment{{Body: why}}))

	// Closing again, or a branch that never had a pull request: nothing to do.
	again, err := c.Close(ctx, head, why)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.State).To(Equal(forge.Closed))
	none, err := c.Close(ctx, "reflux/apps-web/none", why)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none).To(Equal(forge.PullRequest{}))
	g.Expect(gt.API(ctx, http.MethodGet, commentsPath, nil, &comments)).To(Succeed())
	g.Expect(comments).To(HaveLen(1), "a closed pull request gets no second comment")

	g.Expect(c.Comment(ctx, res.Number, "reopened as a new branch")).To(Succeed())
	g.Expect(gt.API(ctx, http.MethodGet, commentsPath, nil, &comments)).To(Succeed())
	g.Expect(comments).To(Equal([]giteaComment{{Body: why}, {Body: "reopened as a new branch"}}))
}

// TestGiteaReadOnlyToken: a token that reads the repository but may not
// write its pull requests is a ReadOnlyError, not a forge failure, and
// Check names it before anything is created where Gitea can tell: when
// the token's user may only read. A token scoped read:repository of a
// user who may write passes the check (Gitea's permissions are the
// user's, not the token's) and is named on its first write.
func TestGiteaReadOnlyToken(t *testing.T) {
	ctx := context.Background()
	gt, url := startFleet(t)
	reader, err := gt.AddReader(ctx, "reader", "fleet")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	scoped, err := gt.MintToken(ctx, gt.Username, "read:repository")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	tests := []struct {
		name, token, head string
		// checkTells: Check names the token before anything is written.
		checkTells bool
		// created: Gitea opens the pull request before it refuses the
		// labels (a reader may open one between the repository's
		// branches).
		created bool
		answer  string
	}{
		{"a user who may only read", reader, "reflux/apps-web/reader-0123456789ab", true, true,
			"user should have a permission to write to a repo"},
		{"a token scoped read:repository", scoped, "reflux/apps-web/scoped-0123456789ab", false, false,
			"required=[write:repository]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := forge.New(ctx, forge.Options{Provider: "gitea", Token: tt.token, APIURL: gt.URL, RepoURL: url})
			g.Expect(err).NotTo(HaveOccurred())
			err = c.Check(ctx)
			if tt.checkTells {
				g.Expect(forge.ReadOnly(err)).To(BeTrue(), "err: %v", err)
			} else {
				g.Expect(err).NotTo(HaveOccurred(), "Gitea cannot tell a token's scopes before a write")
			}

			pushBranch(t, gt, url, tt.head, "cm.yaml", "kind: ConfigMap\ndata: {color: blue}\n")
			res, err := c.Ensure(ctx, forge.Request{Head: tt.head, Base: "main", Title: "reflux: apps/web drifted",
				Body: "| one |", Labels: []string{"reflux", "severity/low"}})
			g.Expect(forge.ReadOnly(err)).To(BeTrue(), "err: %v", err)
			g.Expect(forge.Unauthorized(err)).To(BeTrue(), "not retried: a new token or write access cures it")
			g.Expect(err).To(MatchError(ContainSubstring(tt.answer)), "the forge's answer is quoted")
			g.Expect(res.Created).To(Equal(tt.created))
		})
	}

	// The admin's full token is not read-only: the check passes and a
	// forge failure that is not a 403 is not named so.
	c, err := forge.New(ctx, forge.Options{Provider: "gitea", Token: gt.Token, APIURL: gt.URL, RepoURL: url})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(c.Check(ctx)).To(Succeed())
	_, err = c.Ensure(ctx, forge.Request{Head: "reflux/no-such-branch", Base: "main", Title: "t", Body: "b"})
	NewWithT(t).Expect(err).To(HaveOccurred())
	NewWithT(t).Expect(forge.ReadOnly(err)).To(BeFalse(), "err: %v", err)
}
