package writeback

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
)

// TestRunToleratesUpdateBranchMerge covers a provider's "update branch"
// button: a merge of the source into reflux's branch by someone else.
func TestRunToleratesUpdateBranchMerge(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	f.srv.HumanCommit(t, repoName, "main", map[string]string{"apps/api/deploy.yaml": "replicas: 3\n"})
	merge := mergeSourceInto(t, f, first.Branch, nil)

	// The merge brought nothing of its own: the branch is still reflux's,
	// and with the source merged in, a rebuild has the same tree, so
	// nothing is pushed.
	res := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(res.Outcome).To(Equal(UpToDate), res.Reason)
	g.Expect(res.Commit).To(Equal(merge))

	// A changed drift set still lands on the same branch, rebuilt on the
	// source head: the merge is not kept, as it carried nothing.
	res = f.run(f.request(fp2, setReplicas(6)))
	g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
	g.Expect(res.Branch).To(Equal(first.Branch))
	g.Expect(f.gitOut("rev-parse", res.Commit+"^@")).To(Equal(f.srv.Head(t, repoName, "main")))
	g.Expect(f.show(res.Commit, "apps/api/deploy.yaml")).To(Equal("replicas: 3\n"))

	// When the source moves again, the rebuild follows it.
	human := f.srv.HumanCommit(t, repoName, "main", map[string]string{"notes.md": "x\n"})
	res = f.run(f.request(fp2, setReplicas(6)))
	g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
	g.Expect(f.gitOut("rev-parse", res.Commit+"^")).To(Equal(human))
}

// TestRunKeepsMergeWithOwnContent has a human merge the source into
// reflux's branch and change a file inside the merge. The merge is the
// human's: it stays, its own change stays, and what it took from the
// source is not replayed twice.
func TestRunKeepsMergeWithOwnContent(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	f.srv.HumanCommit(t, repoName, "main", map[string]string{"apps/api/deploy.yaml": "replicas: 3\n"})
	merge := mergeSourceInto(t, f, first.Branch, map[string]string{webFile: "replicas: 5\nimage: web:2.0\n"})

	for _, tt := range []struct {
		fp    string
		apply ApplyFunc
		want  string
	}{
		{fp: fp2, apply: editWeb(7, ""), want: "replicas: 7\nimage: web:2.0\n"},
		{fp: fpNone, apply: noChange, want: "replicas: 2\nimage: web:2.0\n"},
	} {
		res := f.run(f.request(tt.fp, tt.apply))
		g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
		g.Expect(res.Reason).To(ContainSubstring("Jane Human"))
		g.Expect(res.Base).To(Equal(f.srv.Head(t, repoName, "main")), "the merge moved the merge base")
		g.Expect(f.srv.Head(t, repoName, first.Branch)).To(Equal(res.Commit))
		g.Expect(f.gitOut("merge-base", "--is-ancestor", merge, res.Commit)).To(BeEmpty(), "the merge is kept")
		g.Expect(f.show(res.Commit, webFile)).To(Equal(tt.want))
		g.Expect(f.show(res.Commit, "apps/api/deploy.yaml")).To(Equal("replicas: 3\n"))
	}
}

// mergeSourceInto merges main into branch as Jane, optionally changing
// files inside the merge commit, and returns the merge commit.
func mergeSourceInto(t *testing.T, f *fixture, branch string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitserver.Git(t, "", "clone", "-q", "--branch", branch, filepath.Join(f.srv.Root(), repoName), dir)
	ident := []string{"-c", "user.name=Jane Human", "-c", "user.email=jane@example.com"}
	gitserver.Git(t, dir, append(ident, "merge", "-q", "--no-ff", "--no-commit", "origin/main")...)
	for p, content := range extra {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gitserver.Git(t, dir, "add", p)
	}
	gitserver.Git(t, dir, append(ident, "commit", "-q", "-m", "Merge branch 'main'")...)
	gitserver.Git(t, dir, "push", "-q", "origin", "HEAD:"+branch)
	return gitserver.Git(t, dir, "rev-parse", "HEAD")[:40]
}
