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
	// and with the source merged in there is nothing to do.
	res := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(res.Outcome).To(Equal(UpToDate), res.Reason)
	g.Expect(res.Commit).To(Equal(merge))

	// A changed drift set still lands on the same branch, on top.
	res = f.run(f.request(fp2, setReplicas(6)))
	g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
	g.Expect(res.Branch).To(Equal(first.Branch))
	g.Expect(f.gitOut("rev-parse", res.Commit+"^")).To(Equal(merge))

	// When the source moves again, reflux may rebase over the merge.
	human := f.srv.HumanCommit(t, repoName, "main", map[string]string{"notes.md": "x\n"})
	res = f.run(f.request(fp2, setReplicas(6)))
	g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
	g.Expect(f.gitOut("rev-parse", res.Commit+"^")).To(Equal(human))
}

func TestRunRefusesMergeWithOwnContent(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	f.srv.HumanCommit(t, repoName, "main", map[string]string{"apps/api/deploy.yaml": "replicas: 3\n"})
	merge := mergeSourceInto(t, f, first.Branch, map[string]string{webFile: "replicas: 5\nimage: web:2.0\n"})

	res := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(res.Outcome).To(Equal(Refused))
	g.Expect(res.Reason).To(ContainSubstring("Jane Human"))
	g.Expect(f.srv.Head(t, repoName, first.Branch)).To(Equal(merge))
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
