package writeback

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

const (
	apiFile   = "apps/api/deploy.yaml"
	notesFile = "notes.md"
)

// TestRunKeepsHumanCommits changes the drift set of a branch a human has
// committed to. reflux's earlier edits are replaced by the open drift's,
// the human's work stays, and nobody's commit is rewritten: one reflux
// commit lands on top, or, when a human hunk cannot be replayed, nothing.
func TestRunKeepsHumanCommits(t *testing.T) {
	tests := []struct {
		name string
		// human commits these files on reflux's branch; "" deletes one.
		human map[string]string
		// mainMoves adds a commit to the source after the human's.
		mainMoves bool
		fp        string
		apply     ApplyFunc
		want      Outcome
		// files are the contents at the branch head after the run; ""
		// means absent.
		files map[string]string
	}{
		{
			name:  "human commit on another file, replicas edit dropped",
			human: map[string]string{notesFile: "mine\n", apiFile: "replicas: 4\n"},
			fp:    fp2, apply: editWeb(0, "web:2.0"), want: BranchPushed,
			files: map[string]string{webFile: "replicas: 2\nimage: web:2.0\n", notesFile: "mine\n", apiFile: "replicas: 4\n"},
		},
		{
			name:  "human deletes a file",
			human: map[string]string{apiFile: ""},
			fp:    fp2, apply: editWeb(7, "web:2.0"), want: BranchPushed,
			files: map[string]string{webFile: "replicas: 7\nimage: web:2.0\n", apiFile: ""},
		},
		{
			name:  "human commit on other lines of the same file",
			human: map[string]string{webFile: "replicas: 5\nimage: web:2.0\nresources: {}\n"},
			fp:    fp2, apply: editWeb(0, "web:2.0"), want: BranchPushed,
			files: map[string]string{webFile: "replicas: 2\nimage: web:2.0\nresources: {}\n"},
		},
		{
			name:  "source moved after the human commit",
			human: map[string]string{notesFile: "mine\n"}, mainMoves: true,
			fp: fp2, apply: editWeb(0, "web:2.0"), want: BranchPushed,
			files: map[string]string{webFile: "replicas: 2\nimage: web:2.0\n", notesFile: "mine\n", apiFile: "replicas: 1\n"},
		},
		{
			name:  "empty drift set keeps only the human's work",
			human: map[string]string{notesFile: "mine\n"},
			fp:    fpNone, apply: noChange, want: BranchPushed,
			files: map[string]string{webFile: "replicas: 2\nimage: web:1.0\n", notesFile: "mine\n"},
		},
		{
			name:  "the human's value for a field stands",
			human: map[string]string{webFile: "replicas: 6\nimage: web:2.0\n"},
			fp:    fp1, apply: editWeb(5, "web:2.0"), want: UpToDate,
			files: map[string]string{webFile: "replicas: 6\nimage: web:2.0\n"},
		},
		{
			name:  "human hunk cannot be replayed",
			human: map[string]string{webFile: "replicas: 6\nimage: web:2.0\n"},
			fp:    fp2, apply: editWeb(7, "web:2.0"), want: Conflict,
			files: map[string]string{webFile: "replicas: 6\nimage: web:2.0\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, gitserver.StartHTTP)
			base := f.srv.Head(t, repoName, "main")
			first := f.run(f.request(fp1, editWeb(5, "web:2.0")))
			human := humanCommit(t, f, first.Branch, tt.human)
			if tt.mainMoves {
				f.srv.HumanCommit(t, repoName, "main", map[string]string{apiFile: "replicas: 3\n"})
			}

			res := f.run(f.request(tt.fp, tt.apply))
			g.Expect(res.Outcome).To(Equal(tt.want), res.Reason)
			g.Expect(res.Branch).To(Equal(first.Branch))
			g.Expect(res.Base).To(Equal(base), "the change is made on the merge base")
			head := f.srv.Head(t, repoName, first.Branch)
			g.Expect(head).To(Equal(res.Commit))
			for p, want := range tt.files {
				g.Expect(f.fileAt(head, p)).To(Equal(want), p)
			}
			switch tt.want {
			case BranchPushed:
				g.Expect(f.gitOut("rev-parse", head+"^@")).To(Equal(human), "one commit on top of the human's, no force push")
				msg := f.gitOut("log", "-1", "--format=%B", head)
				g.Expect(message.TrailerValue(msg, message.TrailerFingerprint)).To(Equal(tt.fp))
				g.Expect(f.gitOut("log", "-1", "--format=%ce", head)).To(Equal(reflux.Email))
				g.Expect(res.Reason).To(ContainSubstring("kept 1 commit(s) by Jane Human"))
				// The next run with the same set finds the branch as it left it.
				again := f.run(f.request(tt.fp, tt.apply))
				g.Expect(again.Outcome).To(Equal(UpToDate), again.Reason)
				g.Expect(again.Commit).To(Equal(head))
			case Conflict:
				g.Expect(head).To(Equal(human), "nothing pushed")
				g.Expect(res.Reason).To(ContainSubstring(human[:12]))
				g.Expect(res.Reason).To(ContainSubstring("Jane Human"))
				g.Expect(res.Reason).To(ContainSubstring(webFile))
			default:
				g.Expect(head).To(Equal(human))
			}
		})
	}
}

// TestRunLosesPushRaceToHuman has a human push to reflux's branch while
// reflux rebuilds it: the lease fails, and the retry keeps the human's
// commit.
func TestRunLosesPushRaceToHuman(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	var human string
	var calls atomic.Int32
	res := f.run(f.request(fp1, guardedReplicas(2, 7, &calls, func() {
		human = f.srv.HumanCommit(t, repoName, first.Branch, map[string]string{notesFile: "mine\n"})
	})))
	g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
	g.Expect(calls.Load()).To(BeEquivalentTo(2), "the lost race is detected by the lease, then the branch is kept")
	g.Expect(f.srv.Head(t, repoName, first.Branch)).To(Equal(res.Commit))
	g.Expect(f.gitOut("rev-parse", res.Commit+"^@")).To(Equal(human))
	g.Expect(f.show(res.Commit, notesFile)).To(Equal("mine\n"))
	g.Expect(f.show(res.Commit, webFile)).To(Equal("replicas: 7\nimage: web:1.0\n"))
}

// humanCommit commits files to branch as Jane, where "" deletes a file,
// and returns the new commit.
func humanCommit(t *testing.T, f *fixture, branch string, files map[string]string) string {
	t.Helper()
	write := map[string]string{}
	var remove []string
	for p, content := range files {
		if content == "" {
			remove = append(remove, p)
		} else {
			write[p] = content
		}
	}
	if len(remove) == 0 {
		return f.srv.HumanCommit(t, repoName, branch, write)
	}
	dir := t.TempDir()
	gitserver.Git(t, "", "clone", "-q", "--branch", branch, filepath.Join(f.srv.Root(), repoName), dir)
	for p, content := range write {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gitserver.Git(t, dir, "add", p)
	}
	gitserver.Git(t, dir, append([]string{"rm", "-q"}, remove...)...)
	gitserver.Git(t, dir, "-c", "user.name=Jane Human", "-c", "user.email=jane@example.com", "commit", "-q", "-m", "human removal")
	gitserver.Git(t, dir, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return strings.TrimSpace(gitserver.Git(t, dir, "rev-parse", "HEAD"))
}

// fileAt returns path at rev on the server, or "" when it is absent.
func (f *fixture) fileAt(rev, path string) string {
	f.t.Helper()
	if f.gitOut("ls-tree", "--name-only", rev, "--", path) == "" {
		return ""
	}
	return f.show(rev, path)
}
