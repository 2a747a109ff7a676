package livepath

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
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
	f := fixture.NewApp(t, env, "quick", fixture.AppOptions{Files: flags("flags"), SourceInterval: quickInterval})
	// Flux's own fetches stop, so every fetch counted is reflux's.
	src := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.Source), src)).To(Succeed())
	src.Spec.Suspend = true
	g.Expect(env.Client.Update(ctx, src)).To(Succeed())

	f.AddKey(g, alice.Client, "flags", "FEATURE_DARK_MODE", "true")
	rec := f.WaitRecord(g, "ConfigMap", "flags", func(d *refluxv1.Drift) error {
		if err := fixture.InState(refluxv1.DriftProposed)(d); err != nil {
			return err
		}
		if d.Status.Commit == "" {
			return errNotPushed
		}
		return nil
	})
	fixture.Git(t, "", "push", "-q", fixture.GitURL(env, "quick.git"), "--delete", rec.Status.Branch)
	deleted := env.Git.Requests("quick.git")
	start := time.Now()

	f.WaitRecord(g, "ConfigMap", "flags", fixture.InState(refluxv1.DriftDismissed))
	g.Eventually(func() map[string]string { return f.ConfigMap(g, "flags").Data }, timeout, interval).
		ShouldNot(HaveKey("FEATURE_DARK_MODE"), "the hold is released and Flux restores Git")
	g.Expect(fixture.Held(f.ConfigMap(g, "flags"))).To(BeFalse())

	// Over the next intervals: no push at all, and fetches bounded by
	// one branch check per interval since the deletion, besides the three
	// the deletion itself costs: the check that finds the branch gone,
	// then the dismissal's write-back, which looks at the remote for its
	// write and for its check. All three can fall in the first interval.
	bound := func() int { return int(time.Since(start)/quickInterval) + 3 }
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
	g.Expect(fixture.Git(t, "", "ls-remote", "--heads", fixture.GitURL(env, "quick.git"))).NotTo(ContainSubstring(rec.Status.Branch))
}

var (
	errNotPushed = errors.New("the record's branch is only an intent yet")
	errRepushed  = errors.New("reflux pushed again after the reviewer deleted its branch")
)

type fetchesError struct{ got, bound int }

func (e *fetchesError) Error() string {
	return fmt.Sprintf("reflux fetched %d times since the deletion, more than one branch check per interval (%d)", e.got, e.bound)
}
