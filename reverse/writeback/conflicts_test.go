package writeback

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
)

func TestRunRebasesWhenBaseMoved(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	human := f.srv.HumanCommit(t, repoName, "main", map[string]string{"apps/api/deploy.yaml": "replicas: 3\n"})

	res := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(res.Outcome).To(Equal(BranchPushed))
	g.Expect(res.Reason).To(ContainSubstring("rebuilt"))
	g.Expect(res.Branch).To(Equal(first.Branch))
	g.Expect(f.gitOut("rev-parse", res.Commit+"^")).To(Equal(human))
	g.Expect(f.show(res.Commit, "apps/api/deploy.yaml")).To(Equal("replicas: 3\n"))
	g.Expect(f.show(res.Commit, webFile)).To(HavePrefix("replicas: 5\n"))

	// Rebuilt once; the next run is a no-op.
	g.Expect(f.run(f.request(fp1, setReplicas(5))).Outcome).To(Equal(UpToDate))
}

func TestRunHumanCommitOnBaseDuringWriteBack(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	var calls atomic.Int32
	var human string
	res := f.run(f.request(fp1, guardedReplicas(2, 5, &calls, func() {
		human = f.srv.HumanCommit(t, repoName, "main", map[string]string{"apps/api/deploy.yaml": "replicas: 3\n"})
	})))
	g.Expect(res.Outcome).To(Equal(BranchPushed))
	g.Expect(calls.Load()).To(BeEquivalentTo(2), "Apply re-runs on the new head")
	g.Expect(res.Base).To(Equal(human))
	g.Expect(f.gitOut("rev-parse", res.Commit+"^")).To(Equal(human))
}

func TestRunSameFieldChangedInGitIsConflict(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	var calls atomic.Int32
	res := f.run(f.request(fp1, guardedReplicas(2, 5, &calls, func() {
		f.srv.HumanCommit(t, repoName, "main", map[string]string{webFile: "replicas: 4\nimage: web:1.0\n"})
	})))
	g.Expect(res.Outcome).To(Equal(Conflict))
	g.Expect(res.Reason).To(ContainSubstring("/spec/replicas changed in git"))
	g.Expect(f.gitOut("branch", "--list", "reflux/*")).To(BeEmpty(), "nothing is pushed on conflict")

	// The same happens when reflux's branch exists and the base moved.
	f2 := newFixture(t, gitserver.StartHTTP)
	first := f2.run(f2.request(fp1, guardedReplicas(2, 5, nil, nil)))
	f2.srv.HumanCommit(t, repoName, "main", map[string]string{webFile: "replicas: 4\nimage: web:1.0\n"})
	res = f2.run(f2.request(fp1, guardedReplicas(2, 5, nil, nil)))
	g.Expect(res.Outcome).To(Equal(Conflict))
	g.Expect(f2.srv.Head(t, repoName, first.Branch)).To(Equal(first.Commit), "the branch is left alone")
}

func TestRunServerDown(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	main := f.srv.Head(t, repoName, "main")

	// Unreachable from the start.
	f.srv.StopHTTP()
	res, err := f.eng.Run(context.Background(), f.request(fp1, setReplicas(5)))
	g.Expect(err).To(MatchError(ErrGit))
	g.Expect(res.Outcome).To(Equal(GitError))

	// Goes away between clone and push.
	g.Expect(f.srv.StartHTTP()).To(Succeed())
	req := f.request(fp1, func(dir string) ([]string, error) {
		f.srv.StopHTTP()
		return setReplicas(5)(dir)
	})
	res, err = f.eng.Run(context.Background(), req)
	g.Expect(err).To(MatchError(ErrGit))
	g.Expect(res.Outcome).To(Equal(GitError))
	g.Expect(f.gitOut("branch", "--list", "reflux/*")).To(BeEmpty())
	g.Expect(f.srv.Head(t, repoName, "main")).To(Equal(main))

	// Nothing was lost: once the server is back the same request succeeds.
	g.Expect(f.srv.StartHTTP()).To(Succeed())
	g.Expect(f.run(f.request(fp1, setReplicas(5))).Outcome).To(Equal(BranchPushed))
}

func TestRunAfterMerge(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	mergeAndDelete(t, f, first.Branch, "--no-ff")

	// The fix is in main now: nothing to do, no branch.
	res := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(res.Outcome).To(Equal(UpToDate))
	g.Expect(res.Branch).To(BeEmpty())

	// New drift after the merge starts a new branch from the new main.
	next := f.run(f.request(fp2, setReplicas(8)))
	g.Expect(next.Outcome).To(Equal(BranchPushed))
	g.Expect(next.Branch).To(Equal("reflux/flux-system-apps/222222222222"))
	g.Expect(f.gitOut("rev-parse", next.Commit+"^")).To(Equal(f.srv.Head(t, repoName, "main")))
}

func TestRunAfterSquashMerge(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	mergeAndDelete(t, f, first.Branch, "--squash")
	// The squashed branch is still there but its change is in main: it
	// proposes nothing, and is left for the caller to delete.
	res := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(res.Outcome).To(Equal(Obsolete), res.Reason)
	g.Expect(res.Branch).To(Equal(first.Branch))
	g.Expect(res.Commit).To(Equal(first.Commit))
	g.Expect(res.Base).To(Equal(f.srv.Head(t, repoName, "main")))
	g.Expect(f.srv.Head(t, repoName, first.Branch)).To(Equal(first.Commit))
}

// mergeAndDelete merges branch into main as a reviewer would and deletes
// it unless it is a squash merge, where it is kept to test detection.
func mergeAndDelete(t *testing.T, f *fixture, branch, mode string) {
	t.Helper()
	dir := t.TempDir()
	gitserver.Git(t, "", "clone", "-q", "--branch", "main", filepath.Join(f.srv.Root(), repoName), dir)
	gitserver.Git(t, dir, "-c", "user.name=Rita Reviewer", "-c", "user.email=rita@example.com",
		"merge", "-q", mode, "origin/"+branch)
	if mode == "--squash" {
		gitserver.Git(t, dir, "-c", "user.name=Rita Reviewer", "-c", "user.email=rita@example.com",
			"commit", "-q", "-m", "squash")
	}
	gitserver.Git(t, dir, "push", "-q", "origin", "HEAD:main")
	if mode != "--squash" {
		gitserver.Git(t, dir, "push", "-q", "origin", "--delete", branch)
	}
}
