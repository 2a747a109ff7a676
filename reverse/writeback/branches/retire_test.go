package branches

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// fakeForge is a forge that keeps one pull request per head in memory and
// records what reflux asked of it.
type fakeForge struct {
	mu       sync.Mutex
	prs      map[string]*forge.PullRequest
	closed   map[string]string // head -> closing comment
	comments map[int][]string
	ensured  []forge.Request
}

func newFakeForge() *fakeForge {
	return &fakeForge{prs: map[string]*forge.PullRequest{}, closed: map[string]string{}, comments: map[int][]string{}}
}

func (f *fakeForge) Ensure(_ context.Context, req forge.Request) (forge.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ensured = append(f.ensured, req)
	pr, ok := f.prs[req.Head]
	if !ok || pr.State != forge.Open {
		pr = &forge.PullRequest{Number: len(f.prs) + 1, URL: fmt.Sprintf("https://forge.example/pulls/%d", len(f.prs)+1), State: forge.Open}
		f.prs[req.Head] = pr
	}
	pr.Title, pr.Body, pr.Labels, pr.HeadCommit = req.Title, req.Body, req.Labels, req.Commit
	return forge.Result{PullRequest: *pr}, nil
}

func (f *fakeForge) Find(_ context.Context, head string) (forge.PullRequest, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pr, ok := f.prs[head]; ok {
		return *pr, true, nil
	}
	return forge.PullRequest{}, false, nil
}

func (f *fakeForge) Close(_ context.Context, head, comment string) (forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, ok := f.prs[head]
	if !ok || pr.State != forge.Open {
		return forge.PullRequest{}, nil
	}
	pr.State = forge.Closed
	f.closed[head] = comment
	return *pr, nil
}

func (f *fakeForge) Comment(_ context.Context, number int, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.comments[number] = append(f.comments[number], body)
	return nil
}

// alertSet is the shop set with both records on the needs-decision
// branch, and pull requests opened on fg.
func alertSet(t *testing.T, url string, w *Writer, fg *fakeForge) reverse.DriftSet {
	t.Helper()
	set := shopSet(url)
	set.Records[0].Spec.Fields[0].Action = refluxv1.AlertAction
	set.Policy.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{Provider: refluxv1.GiteaProvider}
	w.Forges = func(context.Context, forge.Options) (Forge, error) { return fg, nil }
	return set
}

// dismissed closes rec as a user's dismissal would, on the branch it was
// proposed on.
func dismissed(rec refluxv1.Drift, branch, by string) refluxv1.Drift {
	d := *rec.DeepCopy()
	d.Status.State, d.Status.Branch = refluxv1.DriftDismissed, branch
	d.Status.Closed = &refluxv1.DriftClosure{Reason: refluxv1.ClosedDismissedReason, Message: "the record was annotated reflux.dev/dismiss=true",
		By: by, Time: metav1.NewTime(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))}
	return d
}

func changedFiles(t *testing.T, srv *gittestserver.GitServer, branch string) []string {
	t.Helper()
	dir := clone(t, srv, branch)
	return strings.Fields(run(t, dir, "git", "diff", "--name-only", "origin/main", "HEAD"))
}

// TestBranchProposesExactlyItsOpenRecords: dismissing one of two records
// on a needs-decision branch rebuilds it without that record's edit and
// updates its pull request; dismissing the other closes the pull request
// with a comment naming both, and deletes the branch (issue 17 §1).
func TestBranchProposesExactlyItsOpenRecords(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	w, fg := newWriter(t), newFakeForge()
	set := alertSet(t, url, w, fg)
	flags, web := set.Records[0], set.Records[1]

	results, err := w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	first := results[0]
	g.Expect(first.Outcome).To(Equal(refluxv1.BranchPushedReason), first.Reason)
	g.Expect(first.Records).To(ConsistOf(flags.Name, web.Name))
	g.Expect(changedFiles(t, srv, first.Branch)).To(ConsistOf("base/kustomization.yaml", "overlays/prod/kustomization.yaml"))

	// The flag is dismissed: the branch keeps only the replicas.
	set.Records = []refluxv1.Drift{web}
	set.Records[0].Status.Branch, set.Records[0].Status.Commit = first.Branch, first.Commit
	set.Closed = []refluxv1.Drift{dismissed(flags, first.Branch, "alice@example.com (kubectl-annotate)")}
	results, err = w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	second := results[0]
	g.Expect(second.Outcome).To(Equal(refluxv1.BranchPushedReason), second.Reason)
	g.Expect(second.Branch).To(Equal(first.Branch), "the same branch, rebuilt")
	g.Expect(second.Records).To(Equal([]string{web.Name}))
	g.Expect(changedFiles(t, srv, second.Branch)).To(Equal([]string{"overlays/prod/kustomization.yaml"}))
	last := fg.ensured[len(fg.ensured)-1]
	g.Expect(last.Body).ToNot(ContainSubstring("EXPRESS_SHIPPING"), "the pull request follows the branch")
	g.Expect(last.Body).To(ContainSubstring("/spec/replicas"))

	// The replicas are dismissed too: nothing open is left on it.
	var withdrawn []string
	set.Withdraw = func(_ context.Context, branch, _ string, records []string) error {
		withdrawn = append(withdrawn, records...)
		return nil
	}
	set.Closed = append(set.Closed, dismissed(web, first.Branch, "bob@example.com (kubectl-annotate)"))
	set.Records = nil
	results, err = w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	g.Expect(results[0].Outcome).To(Equal(refluxv1.WithdrawnReason), results[0].Reason)
	g.Expect(results[0].PullRequest).To(Equal("https://forge.example/pulls/1"))
	g.Expect(withdrawn).To(BeEmpty(), "no open record was on it")
	heads := run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")
	g.Expect(heads).ToNot(ContainSubstring(first.Branch), "the branch is deleted")
	comment := fg.closed[first.Branch]
	g.Expect(comment).To(ContainSubstring("no open drift is left on it"))
	g.Expect(comment).To(ContainSubstring("alice@example.com (kubectl-annotate)"))
	g.Expect(comment).To(ContainSubstring("bob@example.com (kubectl-annotate)"))
	g.Expect(comment).To(ContainSubstring("`/data/EXPRESS_SHIPPING`"))
	g.Expect(comment).To(ContainSubstring("Dismissed (Dismissed)"))

	// Nothing left: the next write does nothing at all.
	results, err = w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(results).To(BeEmpty())
}

// TestRecordNoLongerBoundLeavesItsBranch: an open record on a branch
// whose fields are no longer bound for Git is taken off it before the
// branch is closed.
func TestRecordNoLongerBoundLeavesItsBranch(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	w, fg := newWriter(t), newFakeForge()
	set := alertSet(t, url, w, fg)
	set.Records = set.Records[1:]
	results, err := w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	branch := results[0].Branch

	set.Records[0].Status.Branch = branch
	set.Records[0].Spec.Fields[0].Action = refluxv1.IgnoreAction
	var withdrawn []string
	set.Withdraw = func(_ context.Context, b, _ string, records []string) error {
		g.Expect(b).To(Equal(branch))
		withdrawn = append(withdrawn, records...)
		return nil
	}
	results, err = w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	g.Expect(results[0].Outcome).To(Equal(refluxv1.WithdrawnReason))
	g.Expect(withdrawn).To(Equal([]string{set.Records[0].Name}))
	g.Expect(run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")).ToNot(ContainSubstring(branch))
}

// TestHumanCommitIsKeptWhenARecordLeaves: on a branch a human committed
// to, a dismissed record's edit is taken out by a new commit on top; the
// human's commit and its change stay.
func TestHumanCommitIsKeptWhenARecordLeaves(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	w, fg := newWriter(t), newFakeForge()
	set := alertSet(t, url, w, fg)
	flags, web := set.Records[0], set.Records[1]
	results, err := w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	branch := results[0].Branch

	dir := clone(t, srv, branch)
	g.Expect(os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("reviewed by jane\n"), 0o644)).To(Succeed())
	run(t, dir, "git", "add", "NOTES.md")
	run(t, dir, "git", "-c", "user.name=Jane Human", "-c", "user.email=jane@example.com", "commit", "-qm", "notes")
	run(t, dir, "git", "push", "-q", "origin", branch)
	human := strings.TrimSpace(run(t, dir, "git", "rev-parse", "HEAD"))

	set.Records = []refluxv1.Drift{web}
	set.Records[0].Status.Branch = branch
	set.Closed = []refluxv1.Drift{dismissed(flags, branch, "alice@example.com")}
	results, err = w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	g.Expect(results[0].Outcome).To(Equal(refluxv1.BranchPushedReason), results[0].Reason)
	g.Expect(results[0].Records).To(Equal([]string{web.Name}))
	after := clone(t, srv, branch)
	g.Expect(strings.TrimSpace(run(t, after, "git", "rev-parse", "HEAD^"))).To(Equal(human), "a commit on top, never a rewrite")
	g.Expect(changedFiles(t, srv, branch)).To(ConsistOf("NOTES.md", "overlays/prod/kustomization.yaml"))

	// The last record leaves too: reflux's edits go, Jane's stay, and the
	// pull request (hers now) is told, not closed.
	set.Records = nil
	set.Closed = append(set.Closed, dismissed(web, branch, "bob@example.com"))
	results, err = w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	g.Expect(results[0].Outcome).To(Equal(refluxv1.BranchPushedReason), results[0].Reason)
	g.Expect(changedFiles(t, srv, branch)).To(Equal([]string{"NOTES.md"}))
	g.Expect(fg.closed).ToNot(HaveKey(branch), "a human's branch is not closed by reflux")
	g.Expect(fg.comments[1]).To(ContainElement(ContainSubstring("yours to decide")))
}

// TestCheckRetiresABranchNoOpenRecordIsOn: a branch whose records all
// closed while reflux was down is retired by the next check.
func TestCheckRetiresABranchNoOpenRecordIsOn(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	w, fg := newWriter(t), newFakeForge()
	set := alertSet(t, url, w, fg)
	results, err := w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	branch := results[0].Branch

	set.Closed = []refluxv1.Drift{dismissed(set.Records[0], branch, ""), dismissed(set.Records[1], branch, "")}
	set.Records = nil
	check, err := w.Check(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(check.Pending).To(BeEmpty())
	g.Expect(check.Retired).To(HaveLen(1))
	g.Expect(check.Retired[0].Outcome).To(Equal(refluxv1.WithdrawnReason), check.Retired[0].Reason)
	g.Expect(fg.closed).To(HaveKey(branch))
	g.Expect(run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")).ToNot(ContainSubstring(branch))
}

// TestDeletedObjectIsNotWritten: a deletion record is never said to be on
// a branch; it is reported as not written, with why.
func TestDeletedObjectIsNotWritten(t *testing.T) {
	g := NewWithT(t)
	_, url := gitServer(t)
	w := newWriter(t)
	set := shopSet(url)
	gone := set.Records[1].DeepCopy()
	gone.Name = "deployment-gone-1"
	gone.Spec.Fields = []refluxv1.DriftField{{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeRemove,
		Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh}}
	set.Records = append(set.Records, *gone)
	results, err := w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	alert := results[1]
	g.Expect(alert.Outcome).To(Equal(refluxv1.BranchPushedReason), alert.Reason)
	g.Expect(alert.Records).To(Equal([]string{set.Records[1].Name}), "only the record whose edit is on the branch")
	g.Expect(alert.NotWritten).To(HaveKeyWithValue(gone.Name, ContainSubstring("deleted live")))
}
