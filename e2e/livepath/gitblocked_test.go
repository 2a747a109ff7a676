package livepath

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

func flags(names ...string) map[string]string {
	body := ""
	for _, n := range names {
		body += fmt.Sprintf("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  # on for everyone since May\n  FEATURE_SEARCH: \"true\"\n", n)
	}
	return map[string]string{"kustomization.yaml": kustomization, "configmaps.yaml": body}
}

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
	blocked := newFixture(t, "blocked", fixtureOptions{files: flags("flags-a", "flags-b"),
		url: env.Git.StalledHTTPURL(proxy, "blocked.git")})
	other := newFixture(t, "unblocked", fixtureOptions{files: flags("flags")})

	proxy.Stall()
	blocked.addKey(g, "flags-a", "FEATURE_DARK_MODE", "true")
	blocked.waitRecord(g, "flags-a", state(refluxv1.DriftHeld))
	// Write-back has reached the git server, which holds it.
	g.Eventually(proxy.Held, timeout, interval).Should(BeNumerically(">=", 1))

	// Detection goes on, for the same Kustomization and another one.
	blocked.addKey(g, "flags-b", "FEATURE_DARK_MODE", "true")
	blocked.waitRecord(g, "flags-b", state(refluxv1.DriftHeld))
	other.addKey(g, "flags", "FEATURE_DARK_MODE", "true")
	other.waitRecord(g, "flags", state(refluxv1.DriftHeld))
	g.Expect(held(blocked.configMap(g, "flags-b"))).To(BeTrue())
	g.Expect(proxy.Held()).To(BeNumerically(">=", 1), "the blocked write-back is still stuck while detection went on")

	// The other repository's write-back is not queued behind the stuck one.
	other.waitRecord(g, "flags", state(refluxv1.DriftProposed))
	g.Expect(blocked.record(g, "flags-a").Status.State).To(Equal(refluxv1.DriftHeld), "nothing reached the blocked repository")

	// The stalled run times out: a GitError, said so, and retried.
	g.Eventually(func() string { return blocked.condition(g, refluxv1.ReverseSyncedCondition) }, timeout, interval).
		Should(HavePrefix("False/" + refluxv1.GitErrorReason))

	proxy.Resume()
	for _, name := range []string{"flags-a", "flags-b"} {
		rec := blocked.waitRecord(g, name, state(refluxv1.DriftProposed))
		g.Expect(rec.Status.Commit).NotTo(BeEmpty())
	}
	g.Eventually(func() string { return blocked.condition(g, refluxv1.ReverseSyncedCondition) }, timeout, interval).
		Should(HavePrefix("True/"))
}
