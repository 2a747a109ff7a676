package livepath

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// quickInterval is the GitRepository's interval: reflux checks its
// branches at most once per interval.
const quickInterval = 3 * time.Second

// TestQuickDeleteDismissesAndNeverRepushes: a reviewer deletes reflux's
// branch a moment after it was pushed. The record is dismissed, the hold
// released, the branch never pushed again, and the git server sees no
// more fetches than one branch check per interval (Image Updater's #537
// is the bug this avoids).
func TestQuickDeleteDismissesAndNeverRepushes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, "quick", fixtureOptions{files: flags("flags"), sourceInterval: quickInterval})
	// Flux's own fetches stop, so every fetch counted is reflux's.
	src := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.src), src)).To(Succeed())
	src.Spec.Suspend = true
	g.Expect(env.Client.Update(ctx, src)).To(Succeed())

	f.addKey(g, "flags", "FEATURE_DARK_MODE", "true")
	rec := f.waitRecord(g, "flags", func(d *refluxv1.Drift) error {
		if err := state(refluxv1.DriftProposed)(d); err != nil {
			return err
		}
		if d.Status.Commit == "" {
			return errNotPushed
		}
		return nil
	})
	gitCLI(t, "push", "-q", credentialedURL("quick.git"), "--delete", rec.Status.Branch)
	deleted := env.Git.Requests("quick.git")
	start := time.Now()

	f.waitRecord(g, "flags", state(refluxv1.DriftDismissed))
	g.Eventually(func() map[string]string { return f.configMap(g, "flags").Data }, timeout, interval).
		ShouldNot(HaveKey("FEATURE_DARK_MODE"), "the hold is released and Flux restores Git")
	g.Expect(held(f.configMap(g, "flags"))).To(BeFalse())

	// Over the next intervals: no push at all, and fetches bounded by
	// one branch check per interval since the deletion.
	bound := func() int { return int(time.Since(start)/quickInterval) + 2 }
	g.Consistently(func() error {
		since := env.Git.Requests("quick.git").Sub(deleted)
		if since.ReceivePack != 0 {
			return errRepushed
		}
		if since.UploadPack > bound() {
			return &fetchesError{since.UploadPack, bound()}
		}
		return nil
	}, 4*quickInterval, interval).Should(Succeed())
	g.Expect(gitCLI(t, "ls-remote", "--heads", credentialedURL("quick.git"))).NotTo(ContainSubstring(rec.Status.Branch))
}

var (
	errNotPushed = errors.New("the record's branch is only an intent yet")
	errRepushed  = errors.New("reflux pushed again after the reviewer deleted its branch")
)

type fetchesError struct{ got, bound int }

func (e *fetchesError) Error() string {
	return fmt.Sprintf("reflux fetched %d times since the deletion, more than one branch check per interval (%d)", e.got, e.bound)
}

// credentialedURL is a repository's URL with the git server's credentials,
// for the git CLI playing the reviewer.
func credentialedURL(repo string) string {
	u, _ := url.Parse(env.Git.HTTPURL(repo))
	u.User = url.UserPassword(env.Git.Username, env.Git.Password)
	return u.String()
}

func gitCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
