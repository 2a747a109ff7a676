package testenv_test

import (
	"context"
	"net/http"
	"os"
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
