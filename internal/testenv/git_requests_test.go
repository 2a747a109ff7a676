package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/testenv"
)

func TestRequestsCountHTTPSessions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := freshName("requests-http") + ".git"

	// Push clones first (one upload-pack, refused as empty), then pushes.
	_, err := env.Git.PushDir(ctx, repo, writeTree(t, map[string]string{"a.yaml": "a"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Git.RequestsOver(testenv.TransportHTTP, repo)).To(Equal(testenv.RequestCounts{UploadPack: 1, ReceivePack: 1}))

	before := env.Git.Requests(repo)
	refs, err := lsRemote(ctx, env.Git.HTTPURL(repo), httpAuth())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).NotTo(BeEmpty())
	g.Expect(env.Git.Requests(repo).Sub(before)).To(Equal(testenv.RequestCounts{UploadPack: 1}))

	// A clone is an advertisement and an upload-pack POST: one session.
	dir := t.TempDir()
	_, err = cloneInto(ctx, dir, env.Git.HTTPURL(repo), httpAuth())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Join(dir, "a.yaml")).To(BeARegularFile())
	g.Expect(env.Git.Requests(repo).Sub(before)).To(Equal(testenv.RequestCounts{UploadPack: 2}))

	// Refused requests reach the server and count.
	_, err = lsRemote(ctx, env.Git.HTTPURL(repo), &githttp.BasicAuth{Username: "reflux", Password: "wrong"})
	g.Expect(err).To(HaveOccurred())
	g.Expect(env.Git.Requests(repo).Sub(before)).To(Equal(testenv.RequestCounts{UploadPack: 3}))

	g.Expect(env.Git.RequestsOver(testenv.TransportSSH, repo)).To(BeZero())
	g.Expect(env.Git.Requests("/" + repo + "/")).To(Equal(env.Git.Requests(repo)))
	g.Expect(env.Git.Requests("requests-unused.git")).To(BeZero())
}

func TestRequestsCountSSHSessions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := freshName("requests-ssh") + ".git"
	_, err := env.Git.PushDir(ctx, repo, writeTree(t, map[string]string{"a.yaml": "a"}))
	g.Expect(err).NotTo(HaveOccurred())
	httpBefore := env.Git.RequestsOver(testenv.TransportHTTP, repo)
	auth := sshAuth(t, env.Git.KnownHosts)

	refs, err := lsRemote(ctx, env.Git.SSHURL(repo), auth)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).NotTo(BeEmpty())
	g.Expect(env.Git.RequestsOver(testenv.TransportSSH, repo)).To(Equal(testenv.RequestCounts{UploadPack: 1}))

	dir := t.TempDir()
	clone, err := cloneInto(ctx, dir, env.Git.SSHURL(repo), auth)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Git.RequestsOver(testenv.TransportSSH, repo)).To(Equal(testenv.RequestCounts{UploadPack: 2}))

	pushed := commitFile(t, clone, dir, "b.yaml")
	g.Expect(clone.PushContext(ctx, &gogit.PushOptions{Auth: auth})).To(Succeed())
	g.Expect(env.Git.RequestsOver(testenv.TransportSSH, repo)).To(Equal(testenv.RequestCounts{UploadPack: 2, ReceivePack: 1}))

	// The push went through the front to gittestserver's repository.
	check, err := env.Git.Clone(ctx, repo, testenv.DefaultBranch, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	head, err := check.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash()).To(Equal(pushed))

	g.Expect(env.Git.RequestsOver(testenv.TransportHTTP, repo).Sub(httpBefore)).To(Equal(testenv.RequestCounts{UploadPack: 1}))
	g.Expect(env.Git.Requests(repo)).To(Equal(testenv.RequestCounts{UploadPack: 4, ReceivePack: 2}))
}

// TestRequestsCountFluxPolling proves the counters see source-controller's
// own fetches, which is what rate assertions will be made on.
func TestRequestsCountFluxPolling(t *testing.T) {
	if env.SourceController == nil {
		t.Skip("needs Flux")
	}
	g := NewWithT(t)
	ctx := context.Background()
	repo := freshName("requests-flux") + ".git"
	_, err := env.Git.PushDir(ctx, repo, writeTree(t, map[string]string{"a.yaml": "a"}))
	g.Expect(err).NotTo(HaveOccurred())
	ns := freshName("requests-flux")
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	for _, tr := range []testenv.Transport{testenv.TransportHTTP, testenv.TransportSSH} {
		obj, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{
			Name: "requests-" + string(tr), Namespace: ns, Repo: repo, Transport: tr, Interval: time.Hour,
		})
		g.Expect(err).NotTo(HaveOccurred())
		// Ready means source-controller has fetched, so the count is in.
		g.Expect(env.WaitForReady(ctx, obj)).To(Succeed())
		g.Expect(env.Git.RequestsOver(tr, repo).UploadPack).To(BeNumerically(">=", 1), "fetches over %s", tr)
	}
}

// commitFile writes name into the clone at dir and commits it.
func commitFile(t *testing.T, repo *gogit.Repository, dir, name string) plumbing.Hash {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add(name); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "test", Email: "test@reflux.invalid", When: time.Now()}
	hash, err := wt.Commit("add "+name, &gogit.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	return hash
}
