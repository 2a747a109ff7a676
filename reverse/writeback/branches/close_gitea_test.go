package branches

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// TestPushAfterCloseKeepsTheClose (issue 22 §3): a reviewer closes the
// pull request, and reflux pushes a new field onto its branch before its
// next check sees the close. The forge keeps the closed pull request's
// head at the commit the reviewer closed, so by commit alone it reads as
// an earlier branch's. It is not: the open record it proposed makes it
// current. No pull request opens again for the field the reviewer closed,
// its record is dismissed, and the field that joined after the close is
// taken off the branch and written again, under a pull request of its own.
func TestPushAfterCloseKeepsTheClose(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, set := giteaShop(t)
	flags, web := set.Records[0], set.Records[1]
	set.Records = []refluxv1.Drift{flags}

	first := mergeResult(t, newWriter(t), set)
	g.Expect(first.PullRequestState).To(Equal(string(forge.Open)), first.Reason)
	recordPushed(set.Records, first)
	g.Expect(set.Records[0].Status.PullRequest).To(Equal(first.PullRequest))
	number := prNumber(t, first.PullRequest)
	g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/shop/pulls/%d", number),
		map[string]any{"state": "closed"}, nil)).To(Succeed())

	// A new Merge field arrives before the next check: reflux rebuilds
	// the branch with both fields.
	web.Spec.Fields[0].Action = refluxv1.MergeAction
	set.Records = append(set.Records, web)
	second := mergeResult(t, newWriter(t), set)
	g.Expect(second.Branch).To(Equal(first.Branch), "reflux rebuilds its open branch under its name")
	g.Expect(second.Commit).NotTo(Equal(first.Commit))
	g.Expect(second.PullRequest).To(Equal(first.PullRequest), "the closed pull request stands: %s", second.Reason)
	g.Expect(second.PullRequestState).To(Equal(string(forge.Closed)))
	g.Expect(giteaPRsOf(t, gt, first.Branch)).To(HaveLen(1), "no pull request reopens the fields the reviewer closed")
	recordPushed(set.Records, second)
	g.Expect(set.Records[1].Status.PullRequest).To(BeEmpty(), "the field that joined after the close was never reviewed")

	var withdrawn []string
	set.Withdraw = func(_ context.Context, branch, why string, records []string) error {
		g.Expect(branch).To(Equal(first.Branch))
		g.Expect(why).To(ContainSubstring(first.PullRequest + " was closed before the record joined it"))
		withdrawn = append(withdrawn, records...)
		return nil
	}
	bc, err := newWriter(t).Check(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bc.Closed).To(ConsistOf(And(HaveField("Name", flags.Name),
		HaveField("Reason", refluxv1.ClosedPullRequestClosedReason))), "only the record the reviewer saw is dismissed")
	g.Expect(bc.Pending).To(BeEmpty())
	g.Expect(bc.DeletedClosed).To(BeEmpty(), "pushed to since the close: not the branch the reviewer closed")
	g.Expect(withdrawn).To(ConsistOf(web.Name), "taken off the branch, not read as rejected with it")
	g.Expect(giteaPRsOf(t, gt, first.Branch)).To(HaveLen(1))

	// As the governor applies it: flags dismissed, web off the branch.
	// The next write rebuilds the branch with web alone, and opens it a
	// pull request of its own: the closed one proposed none of it.
	rest := set.Records[1]
	d := decide.OnBranch(&rest, decide.Branch{Event: decide.Withdrawn, Branch: first.Branch, Now: time.Now()}, false)
	g.Expect(d.Record).NotTo(BeNil())
	set.Records, set.Withdraw = []refluxv1.Drift{*d.Record}, nil
	third := mergeResult(t, newWriter(t), set)
	g.Expect(third.PullRequestState).To(Equal(string(forge.Open)), third.Reason)
	g.Expect(third.PullRequest).NotTo(Equal(first.PullRequest))
	var opened apiPR
	g.Expect(gt.API(ctx, http.MethodGet, fmt.Sprintf("/repos/reflux/shop/pulls/%d", prNumber(t, third.PullRequest)), nil, &opened)).To(Succeed())
	g.Expect(opened.Body).To(ContainSubstring("/spec/replicas"))
	g.Expect(opened.Body).NotTo(ContainSubstring("EXPRESS_SHIPPING"), "the field the reviewer closed is not proposed again")
}

// mergeResult writes set and returns its Merge branch's result.
func mergeResult(t *testing.T, w *Writer, set reverse.DriftSet) reverse.BranchResult {
	t.Helper()
	results, err := w.Write(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Action == refluxv1.MergeAction && r.Branch != "" {
			return r
		}
	}
	t.Fatalf("no Merge branch in %+v", results)
	return reverse.BranchResult{}
}

// recordPushed applies res to the records it carries, as the scheduler's
// applyResult does.
func recordPushed(records []refluxv1.Drift, res reverse.BranchResult) {
	ev := decide.Branch{Event: decide.Pushed, Branch: res.Branch, Commit: res.Commit, Fingerprint: res.Fingerprint,
		PullRequest: res.PullRequest, PullRequestClosed: res.PullRequestState == string(forge.Closed), Now: time.Now()}
	for i := range records {
		for _, n := range res.Records {
			if records[i].Name != n {
				continue
			}
			if d := decide.OnBranch(&records[i], ev, false); d.Record != nil {
				records[i] = *d.Record
			}
		}
	}
}

// giteaPRsOf lists the pull requests of head, in any state.
func giteaPRsOf(t *testing.T, gt *testenv.Gitea, head string) []apiPR {
	t.Helper()
	var prs, out []apiPR
	if err := gt.API(context.Background(), http.MethodGet, "/repos/reflux/shop/pulls?state=all&limit=50", nil, &prs); err != nil {
		t.Fatal(err)
	}
	for _, p := range prs {
		if p.Head.Label == head {
			out = append(out, p)
		}
	}
	return out
}

func prNumber(t *testing.T, url string) int {
	t.Helper()
	n, err := strconv.Atoi(url[strings.LastIndex(url, "/")+1:])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHumanPushAfterCloseKeepsTheClose (issue 22 §3): a reviewer closes
// the pull request, then someone pushes a commit onto its branch before
// reflux's next check. The check must not read the closed pull request
// as an earlier branch's and open another for the fields it proposed: the
// record is dismissed, and the branch, a human's now, is left to them.
func TestHumanPushAfterCloseKeepsTheClose(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, set := giteaShop(t)
	set.Records = set.Records[:1]
	first := mergeResult(t, newWriter(t), set)
	recordPushed(set.Records, first)
	g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/shop/pulls/%d", prNumber(t, first.PullRequest)),
		map[string]any{"state": "closed"}, nil)).To(Succeed())

	dir := t.TempDir()
	url := strings.Replace(set.Source.URL, "://", "://"+gt.Username+":"+gt.Password+"@", 1)
	run(t, "", "git", "clone", "-q", "-b", first.Branch, url, dir)
	g.Expect(os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("why the flag\n"), 0o644)).To(Succeed())
	run(t, dir, "git", "add", "NOTES.md")
	run(t, dir, "git", "-c", "user.name=Jane Human", "-c", "user.email=jane@example.com", "commit", "-qm", "notes")
	run(t, dir, "git", "push", "-q", "origin", first.Branch)

	bc, err := newWriter(t).Check(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bc.Closed).To(ConsistOf(And(HaveField("Name", set.Records[0].Name),
		HaveField("Reason", refluxv1.ClosedPullRequestClosedReason))), "the reviewer's close stands")
	g.Expect(bc.Pending).To(BeEmpty())
	g.Expect(bc.DeletedClosed).To(BeEmpty(), "pushed to after the close: the human's to clean up")
	g.Expect(giteaPRsOf(t, gt, first.Branch)).To(HaveLen(1), "no pull request reopens the closed field")
}
