package forge_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// listCounter counts the requests that list a repository's pull
// requests, passing every request on to the real Gitea.
type listCounter struct{ lists atomic.Int32 }

func (c *listCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pulls") {
		c.lists.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestGiteaFindReadsFromTheNewest (issue 22 §3): with more pull requests
// than one page, find stops at the first page holding the branch's, and
// that is its newest; only a branch with none, or an old one, reads on.
func TestGiteaFindReadsFromTheNewest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Pages of 10, where Gitea's default is 50: the walk is the same, with
	// a fifth of the pull requests to make.
	gt, url := startFleetWith(t, testenv.GiteaOptions{MaxResponseItems: 10})

	// The oldest pull request is the one a reviewer closed on "again";
	// 11 others follow it, then a new one on "again": 14 in all, more than
	// one page.
	const fillers = 11
	branches := []string{"reflux/again", "reflux/old"}
	for i := range fillers {
		branches = append(branches, fmt.Sprintf("reflux/filler-%02d", i))
	}
	pushBranches(t, gt, url, branches)
	open := func(head string) int {
		var pr giteaPR
		g.Expect(gt.API(ctx, http.MethodPost, "/repos/reflux/fleet/pulls",
			map[string]any{"head": head, "base": "main", "title": head}, &pr)).To(Succeed())
		return pr.Number
	}
	closed := open("reflux/again")
	g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/fleet/pulls/%d", closed),
		map[string]any{"state": "closed"}, nil)).To(Succeed())
	old := open("reflux/old")
	for _, b := range branches[2:] {
		open(b)
	}
	newest := open("reflux/again")

	counter := &listCounter{}
	c, err := forge.New(ctx, forge.Options{Provider: "gitea", Token: gt.Token, APIURL: gt.URL, RepoURL: url, Transport: counter})
	g.Expect(err).NotTo(HaveOccurred())
	find := func(head string) (forge.PullRequest, bool, int32) {
		counter.lists.Store(0)
		pr, ok, err := c.Find(ctx, head)
		g.Expect(err).NotTo(HaveOccurred())
		return pr, ok, counter.lists.Load()
	}

	pr, ok, lists := find("reflux/again")
	g.Expect(ok).To(BeTrue())
	g.Expect(pr.Number).To(Equal(newest), "the newest of the branch's pull requests, not the one closed before")
	g.Expect(pr.State).To(Equal(forge.Open))
	g.Expect(lists).To(BeEquivalentTo(1), "the first page holds it: no later page holds a newer one")

	pr, ok, lists = find("reflux/old")
	g.Expect(ok).To(BeTrue())
	g.Expect(pr.Number).To(Equal(old))
	g.Expect(lists).To(BeEquivalentTo(2), "12 newer pull requests fill the first page")

	_, ok, lists = find("reflux/never")
	g.Expect(ok).To(BeFalse())
	g.Expect(lists).To(BeEquivalentTo(2), "a branch with none reads every page, up to the bound")
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
