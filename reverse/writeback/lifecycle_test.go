package writeback

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
)

func TestBranchLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, gitserver.StartHTTP)
	req := f.request(fp1, setReplicas(5))
	repo := Repo{URL: req.RepoURL, Auth: req.Auth}

	open := f.run(req)
	alertReq := f.request(fp2, setReplicas(6))
	alertReq.Kind = KindAlert
	alert := f.run(alertReq)
	otherReq := f.request(fp2, func(dir string) ([]string, error) {
		return []string{"apps/api/deploy.yaml"}, os.WriteFile(filepath.Join(dir, "apps/api/deploy.yaml"), []byte("replicas: 4\n"), 0o644)
	})
	otherReq.Kustomization.Name = "infra"
	other := f.run(otherReq)

	states, err := f.eng.ListBranches(ctx, repo, "reflux/", "main")
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(states).To(ConsistOf(
		BranchState{Name: open.Branch, Commit: open.Commit},
		BranchState{Name: alert.Branch, Commit: alert.Commit, NeedsDecision: true},
		BranchState{Name: other.Branch, Commit: other.Commit},
	))
	g.Expect(f.eng.DeleteMerged(ctx, repo, "reflux/", "main", open.Branch)).To(MatchError(ErrNotMerged))

	mergeAndDelete(t, f, other.Branch, "--squash")
	f.srv.HumanCommit(t, repoName, "main", map[string]string{"unrelated.md": "x\n"})
	mergeAndKeep(t, f, open.Branch)

	states, err = f.eng.ListBranches(ctx, repo, "reflux/", "main")
	g.Expect(err).ToNot(HaveOccurred())
	byName := map[string]MergedBy{}
	for _, s := range states {
		byName[s.Name] = s.MergedBy
	}
	g.Expect(byName).To(Equal(map[string]MergedBy{
		open.Branch:  MergedAncestor,
		alert.Branch: NotMerged,
		other.Branch: MergedContent,
	}))

	for _, name := range []string{open.Branch, other.Branch} {
		g.Expect(f.eng.DeleteMerged(ctx, repo, "reflux/", "main", name)).To(Succeed())
		g.Expect(f.srv.Head(t, repoName, name)).To(BeEmpty())
	}
	g.Expect(f.eng.DeleteMerged(ctx, repo, "reflux/", "main", open.Branch)).To(Succeed(), "already gone")
	g.Expect(f.srv.Head(t, repoName, alert.Branch)).To(Equal(alert.Commit))

	g.Expect(f.eng.DeleteMerged(ctx, repo, "reflux/", "main", "main")).To(MatchError(branch.ErrSourceBranch))
	g.Expect(f.eng.DeleteMerged(ctx, repo, "reflux/", "dev", "main")).To(MatchError(branch.ErrOutsidePrefix))
	g.Expect(f.srv.Head(t, repoName, "main")).ToNot(BeEmpty())
}

func mergeAndKeep(t *testing.T, f *fixture, branch string) {
	t.Helper()
	dir := t.TempDir()
	gitserver.Git(t, "", "clone", "-q", "--branch", "main", f.srv.Root()+"/"+repoName, dir)
	gitserver.Git(t, dir, "-c", "user.name=Rita", "-c", "user.email=rita@example.com", "merge", "-q", "--no-ff", "origin/"+branch)
	gitserver.Git(t, dir, "push", "-q", "origin", "HEAD:main")
}

// TestDeleteClosed deletes a branch whose pull request was closed
// unmerged, but only at the commit the reviewer decided on.
func TestDeleteClosed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, gitserver.StartHTTP)
	req := f.request(fp1, setReplicas(5))
	repo := Repo{URL: req.RepoURL, Auth: req.Auth}
	closed := f.run(req)

	g.Expect(f.eng.DeleteClosed(ctx, repo, "reflux/", "main", closed.Branch, "0123456789abcdef0123456789abcdef01234567")).
		To(MatchError(ErrMoved), "a head the reviewer never saw stays")
	g.Expect(f.srv.Head(t, repoName, closed.Branch)).To(Equal(closed.Commit))

	g.Expect(f.eng.DeleteClosed(ctx, repo, "reflux/", "main", closed.Branch, closed.Commit)).To(Succeed())
	g.Expect(f.srv.Head(t, repoName, closed.Branch)).To(BeEmpty())
	g.Expect(f.eng.DeleteClosed(ctx, repo, "reflux/", "main", closed.Branch, closed.Commit)).To(Succeed(), "already gone")
	g.Expect(f.eng.DeleteClosed(ctx, repo, "reflux/", "main", "main", closed.Commit)).To(MatchError(branch.ErrSourceBranch))
	g.Expect(f.srv.Head(t, repoName, "main")).ToNot(BeEmpty())
}
