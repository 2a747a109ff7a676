package pullrequest

import (
	"context"
	"errors"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestReadOnlyTokenIsNamed (issue 22 §3): a forge token scoped
// read:repository reads the repository, so the policy's check passes
// (Gitea says the user's permissions, not the token's), and Gitea refuses
// the pull request with 403. The Kustomization's ReverseSynced names it,
// TokenReadOnly with Gitea's answer, rather than one more
// PullRequestFailed; the branch is pushed all the same.
func TestReadOnlyTokenIsNamed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "readonly"
	scoped, err := gt.MintToken(ctx, gt.Username, "read:repository")
	g.Expect(err).NotTo(HaveOccurred())
	k, err := createTenant(ctx, tenant{namespace: name, repo: name, dir: "testdata/checkout",
		labels: map[string]string{tierLabel: name}, token: scoped})
	g.Expect(err).NotTo(HaveOccurred())
	app := fixture.Namespace{Env: env, Name: name}
	g.Expect(app.WaitClean(ctx, k.Name)).To(Succeed())

	app.AddKey(g, env.Client, "checkout-flags", "ONE_CLICK", "true")
	g.Eventually(func() string {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(k), k)
		if c := conditions.Get(k, refluxv1.ReverseSyncedCondition); c != nil && c.Status == "False" {
			return c.Reason + ": " + c.Message
		}
		return ""
	}, timeout, interval).Should(And(HavePrefix(refluxv1.TokenReadOnlyReason), ContainSubstring("required=[write:repository]")))
	app.WaitRecord(g, "ConfigMap", "checkout-flags", func(d *refluxv1.Drift) error {
		if d.Status.Branch == "" || d.Status.Commit == "" {
			return errors.New("no branch pushed yet")
		}
		return nil
	})
	g.Expect(pullsIn(g, name, "")).To(BeEmpty(), "Gitea opened nothing for the token")
}
