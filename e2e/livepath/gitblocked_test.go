package livepath

import (
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestGitBlockedDoesNotDelayDetection: one Kustomization's repository
// sits behind a git server that accepts connections and never answers.
// Its write-back stalls, times out and is retried with backoff; meanwhile
// live edits to it and to a Kustomization of another repository are held
// and recorded as always, and the other repository's write-back goes on.
// Once the server answers, the stalled write-back completes.
func TestGitBlockedDoesNotDelayDetection(t *testing.T) {
	g := NewWithT(t)
	proxy, err := env.Git.StallProxyFor(testenv.TransportHTTP)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = proxy.Close() })
	blocked := fixture.NewApp(t, env, "blocked", fixture.AppOptions{Files: flags("flags-a", "flags-b"),
		URL: env.Git.StalledHTTPURL(proxy, "blocked.git")})
	other := fixture.NewApp(t, env, "unblocked", fixture.AppOptions{Files: flags("flags")})

	proxy.Stall()
	blocked.AddKey(g, alice.Client, "flags-a", "FEATURE_DARK_MODE", "true")
	blocked.WaitRecord(g, "ConfigMap", "flags-a", fixture.InState(refluxv1.DriftHeld))
	// Write-back has reached the git server, which holds it.
	g.Eventually(proxy.Held, timeout, interval).Should(BeNumerically(">=", 1))

	// Detection goes on, for the same Kustomization and another one.
	blocked.AddKey(g, alice.Client, "flags-b", "FEATURE_DARK_MODE", "true")
	blocked.WaitRecord(g, "ConfigMap", "flags-b", fixture.InState(refluxv1.DriftHeld))
	other.AddKey(g, alice.Client, "flags", "FEATURE_DARK_MODE", "true")
	other.WaitRecord(g, "ConfigMap", "flags", fixture.InState(refluxv1.DriftHeld))
	g.Expect(fixture.Held(blocked.ConfigMap(g, "flags-b"))).To(BeTrue())
	g.Expect(proxy.Held()).To(BeNumerically(">=", 1), "the blocked write-back is still stuck while detection went on")

	// The other repository's write-back is not queued behind the stuck one.
	other.WaitRecord(g, "ConfigMap", "flags", fixture.InState(refluxv1.DriftProposed))
	g.Expect(blocked.Records(g, "ConfigMap", "flags-a")).To(ConsistOf(HaveField("Status.State", refluxv1.DriftHeld)),
		"nothing reached the blocked repository")

	// The stalled run times out: a GitError, said so, and retried.
	g.Eventually(func() string { return blocked.Condition(g, blocked.Name, refluxv1.ReverseSyncedCondition) }, timeout, interval).
		Should(HavePrefix("False/" + refluxv1.GitErrorReason))

	proxy.Resume()
	for _, name := range []string{"flags-a", "flags-b"} {
		rec := blocked.WaitRecord(g, "ConfigMap", name, fixture.InState(refluxv1.DriftProposed))
		g.Expect(rec.Status.Commit).NotTo(BeEmpty())
	}
	g.Eventually(func() string { return blocked.Condition(g, blocked.Name, refluxv1.ReverseSyncedCondition) }, timeout, interval).
		Should(HavePrefix("True/"))
}
