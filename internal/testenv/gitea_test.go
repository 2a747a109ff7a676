package testenv_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestGiteaStartsWithAdminAndToken proves the harness's Gitea: healthy,
// the admin's token answers the API, a pushed tree is served, and Stop
// removes the server's directory.
func TestGiteaStartsWithAdminAndToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, err := testenv.StartGitea(ctx, testenv.GiteaOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = gt.Stop() // the test already failed
		}
	})

	var me struct {
		Login   string `json:"login"`
		IsAdmin bool   `json:"is_admin"`
	}
	g.Expect(gt.API(ctx, http.MethodGet, "/user", nil, &me)).To(Succeed())
	g.Expect(me.Login).To(Equal(gt.Username))
	g.Expect(me.IsAdmin).To(BeTrue())
	var version struct {
		Version string `json:"version"`
	}
	g.Expect(gt.API(ctx, http.MethodGet, "/version", nil, &version)).To(Succeed())
	g.Expect(version.Version).To(Equal("1.26.0"), "the SDK refuses a server reporting 'development'")

	url, commit, err := gt.PushDir(ctx, "fleet", writeTree(t, map[string]string{"apps/cm.yaml": "kind: ConfigMap\n"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(url).To(HavePrefix(gt.URL))
	var branch struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	// Gitea indexes a push to an empty repository asynchronously (its
	// post-receive hook queues the update).
	g.Eventually(func() (string, error) {
		err := gt.API(ctx, http.MethodGet, "/repos/"+gt.Username+"/fleet/branches/main", nil, &branch)
		return branch.Commit.ID, err
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(commit))

	// A second push replaces the tree on the existing repository.
	_, second, err := gt.PushDir(ctx, "fleet", writeTree(t, map[string]string{"apps/cm.yaml": "kind: ConfigMap\ndata: {}\n"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).NotTo(Equal(commit))

	// Gitea takes a key whose identity is the admin's activated email,
	// and refuses one naming an email no user of it has.
	key, err := testenv.NewSigningKey(gt.Username, "test", gt.Username+"@example.com")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gt.AddGPGKey(ctx, key.Public)).To(Succeed())
	var keys []struct {
		Emails []struct {
			Email string `json:"email"`
		} `json:"emails"`
	}
	g.Expect(gt.API(ctx, http.MethodGet, "/user/gpg_keys", nil, &keys)).To(Succeed())
	g.Expect(keys).To(ConsistOf(HaveField("Emails", ConsistOf(HaveField("Email", gt.Username+"@example.com")))))
	stranger, err := testenv.NewSigningKey("stranger", "test", "stranger@example.org")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gt.AddGPGKey(ctx, stranger.Public)).To(MatchError(ContainSubstring("None of the emails attached to the GPG key")))

	log, err := gt.Process.Log()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).To(ContainSubstring("Listen"))

	stopped = true
	g.Expect(gt.Stop()).To(Succeed())
	_, err = os.Stat(gt.Process.LogPath)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "Stop removes the directory it created")
	g.Expect(gt.API(ctx, http.MethodGet, "/version", nil, nil)).NotTo(Succeed(), "the server is gone")
}

// TestGiteaMergeIsIdempotent: a merge whose answer was lost leaves the
// pull request merged but maybe its branch in place; merging again
// succeeds and finishes the deletion, and a pull request that is not
// merged still refuses.
func TestGiteaMergeIsIdempotent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, err := testenv.StartGitea(ctx, testenv.GiteaOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = gt.Stop() })
	_, _, err = gt.PushDir(ctx, "merges", writeTree(t, map[string]string{"a.yaml": "a: 1\n"}))
	g.Expect(err).NotTo(HaveOccurred())
	// Gitea indexes the first push asynchronously; a branch made before
	// that would become the default one.
	g.Eventually(func() error {
		return gt.API(ctx, http.MethodGet, "/repos/reflux/merges/branches/main", nil, nil)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	open := func(branch string) int {
		var pr struct {
			Number int `json:"number"`
		}
		g.Expect(gt.API(ctx, http.MethodPost, "/repos/reflux/merges/contents/"+branch+".yaml", map[string]any{
			"content": "YjogMgo=", "branch": "main", "new_branch": branch, "message": "add " + branch}, nil)).To(Succeed())
		g.Expect(gt.API(ctx, http.MethodPost, "/repos/reflux/merges/pulls", map[string]any{
			"head": branch, "base": "main", "title": branch}, &pr)).To(Succeed())
		return pr.Number
	}
	branchExists := func(name string) bool {
		err := gt.API(ctx, http.MethodGet, "/repos/reflux/merges/branches/"+name, nil, nil)
		g.Expect(err == nil || strings.Contains(err.Error(), "404")).To(BeTrue(), "%v", err)
		return err == nil
	}

	merged := open("merged")
	g.Expect(gt.Merge(ctx, "reflux", "merges", merged, "merge", false)).To(Succeed())
	g.Expect(branchExists("merged")).To(BeTrue(), "kept, as a merge whose answer was lost before the deletion")
	g.Expect(gt.Merge(ctx, "reflux", "merges", merged, "merge", true)).To(Succeed(), "already merged is merged")
	g.Expect(branchExists("merged")).To(BeFalse())

	closed := open("closed")
	g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/merges/pulls/%d", closed), map[string]any{"state": "closed"}, nil)).To(Succeed())
	g.Expect(gt.Merge(ctx, "reflux", "merges", closed, "merge", true)).NotTo(Succeed())
	g.Expect(branchExists("closed")).To(BeTrue(), "an unmerged pull request's branch is left alone")
}
