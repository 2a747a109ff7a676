package forge_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
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

// requestCounter counts the requests a Client sends, passing each on to
// the real Gitea.
type requestCounter struct {
	mu    sync.Mutex
	paths []string
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, r.Method+" "+r.URL.EscapedPath())
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// take returns the requests sent since the last take.
func (c *requestCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.paths
	c.paths = nil
	return out
}

// TestGiteaFindIsBounded (issue 22 §3): find asks Gitea by base and head,
// so an open pull request costs one request however many the repository
// has, and a branch with none costs that and the open ones' pages, where
// walking the list read every page. Only a branch whose pull request Gitea answers closed
// walks the list newest first, to the first page holding one of the
// branch's: the newest, not the closed one before it.
func TestGiteaFindIsBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Pages of 10, where Gitea's default is 50: 16 pull requests fill two
	// pages, which a walk of the list would read for a branch with none.
	gt, url := startFleetWith(t, testenv.GiteaOptions{MaxResponseItems: 10})

	const fillers = 10
	branches := []string{"reflux/again", "reflux/old", "reflux/done", "reflux/other", "release/v1"}
	for i := range fillers {
		branches = append(branches, fmt.Sprintf("reflux/filler-%02d", i))
	}
	pushBranches(t, gt, url, branches)
	open := func(head, base string) int {
		var pr giteaPR
		g.Expect(gt.API(ctx, http.MethodPost, "/repos/reflux/fleet/pulls",
			map[string]any{"head": head, "base": base, "title": head}, &pr)).To(Succeed())
		return pr.Number
	}
	closePR := func(n int) {
		g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/fleet/pulls/%d", n),
			map[string]any{"state": "closed"}, nil)).To(Succeed())
	}
	// The oldest pull request is the one a reviewer closed on "again", as
	// is the next on "done"; "other" targets release/v1. The fillers
	// follow, then a new one on "again" and on "done", the latter closed too.
	closePR(open("reflux/again", "main"))
	closePR(open("reflux/done", "main"))
	old := open("reflux/old", "main")
	other := open("reflux/other", "release/v1")
	for _, b := range branches[5:] {
		open(b, "main")
	}
	newest := open("reflux/again", "main")
	done := open("reflux/done", "main")
	closePR(done)

	counter := &requestCounter{}
	connect := func(base string) *forge.Client {
		c, err := forge.New(ctx, forge.Options{Provider: "gitea", Token: gt.Token, APIURL: gt.URL, RepoURL: url,
			Base: base, Transport: counter})
		g.Expect(err).NotTo(HaveOccurred())
		counter.take() // New reads Gitea's version
		return c
	}
	c := connect("main")
	find := func(c *forge.Client, head string) (forge.PullRequest, bool, []string) {
		pr, ok, err := c.Find(ctx, head)
		g.Expect(err).NotTo(HaveOccurred())
		return pr, ok, counter.take()
	}

	// 13 pull requests are open: two pages of 10.
	_, ok, sent := find(c, "reflux/never")
	g.Expect(ok).To(BeFalse())
	g.Expect(sent).To(HaveLen(3), "a branch with none costs the lookup and the open pull requests' pages, "+
		"not a walk of every page: %v", sent)

	pr, ok, sent := find(c, "reflux/again")
	g.Expect(ok).To(BeTrue())
	g.Expect(pr.Number).To(Equal(newest), "the open one, not the one closed before")
	g.Expect(pr.State).To(Equal(forge.Open))
	g.Expect(sent).To(HaveLen(2), "Gitea answers the closed one; the first page of open ones holds the newest: %v", sent)

	pr, ok, sent = find(c, "reflux/old")
	g.Expect(ok).To(BeTrue())
	g.Expect(pr.Number).To(Equal(old))
	g.Expect(sent).To(HaveLen(1), "an open one is found in one request, however old: %v", sent)

	pr, ok, sent = find(c, "reflux/done")
	g.Expect(ok).To(BeTrue())
	g.Expect(pr.Number).To(Equal(done), "the newest of the branch's closed pull requests")
	g.Expect(pr.State).To(Equal(forge.Closed))
	g.Expect(sent).To(HaveLen(4), "the answer, the open ones (two pages: none is the branch's), then the first page, "+
		"which holds the newest: %v", sent)

	pr, ok, _ = find(c, "reflux/other")
	g.Expect(ok).To(BeTrue(), "an open pull request a reviewer retargeted to another branch is the branch's")
	g.Expect(pr.Number).To(Equal(other))
	pr, ok, sent = find(connect("release/v1"), "reflux/other")
	g.Expect(ok).To(BeTrue(), "a base with a slash in its name: %v", sent)
	g.Expect(pr.Number).To(Equal(other))

	// Without a base, find asks into the repository's default branch.
	_, ok, sent = find(connect(""), "reflux/never")
	g.Expect(ok).To(BeFalse())
	g.Expect(sent).To(HaveLen(4), "the repository, the lookup, then the open pull requests: %v", sent)
	closePR(other)
	_, ok, _ = find(c, "reflux/other")
	g.Expect(ok).To(BeFalse(), "a closed pull request into another branch than the base is not found (README)")
}

// pushBranches commits a file on top of main and pushes the commit as
// each of branches, in one push.
func pushBranches(t *testing.T, gt *testenv.Gitea, url string, branches []string) {
	t.Helper()
	dir := t.TempDir()
	r, err := gogit.PlainClone(dir, false, &gogit.CloneOptions{URL: url, Auth: gt.BasicAuth(),
		ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatalf("cloning: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("kind: ConfigMap\ndata: {a: b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := r.Worktree()
	if _, err := wt.Add("cm.yaml"); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("fill", &gogit.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	var specs []config.RefSpec
	for _, b := range branches {
		specs = append(specs, config.RefSpec(h.String()+":refs/heads/"+b))
	}
	if err := r.Push(&gogit.PushOptions{Auth: gt.BasicAuth(), RefSpecs: specs}); err != nil {
		t.Fatalf("pushing: %v", err)
	}
}
