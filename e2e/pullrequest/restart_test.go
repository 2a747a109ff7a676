package pullrequest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestRestartOpensNoSecondPullRequest: a live flag becomes one pull
// request; reflux (the installed binary) is killed with SIGKILL and
// started again; a second flag on the same Kustomization grows that same
// pull request. Nothing is remembered across the restart but Git, the
// records and the forge, so one open pull request for the head branch
// proves the new process found the old one instead of opening its own.
func TestRestartOpensNoSecondPullRequest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const checkout, shard = "checkout", "restart"
	k, err := createTenant(ctx, tenant{namespace: checkout, repo: checkout, dir: "testdata/checkout",
		labels: map[string]string{tierLabel: checkout, shardKey: shard}})
	g.Expect(err).NotTo(HaveOccurred())

	first := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-restart", Selector: shardKey + "=" + shard})
	app := fixture.Namespace{Env: env, Name: checkout}
	g.Expect(app.WaitClean(ctx, k.Name)).To(Succeed())
	// Held, and past a reconcile of Flux: an apply of Flux already under
	// way as the hold lands can undo the first edit of an object, and
	// this test is about the restart, not that race.
	cm := &corev1.ConfigMap{}
	driftEdit(g, checkout, "checkout-flags", cm, func() { cm.Data["ONE_CLICK"] = "true" })
	rec := app.WaitRecord(g, "ConfigMap", "checkout-flags", withPullRequest)
	branch, url := rec.Status.Branch, rec.Status.PullRequest
	prs := pullsIn(g, checkout, "")
	g.Expect(prs).To(HaveLen(1))
	g.Expect(prs[0].URL).To(Equal(url))
	g.Expect(prs[0].Head.Label).To(Equal(branch))
	g.Expect(first.Kill()).To(Succeed())

	fixture.StartReflux(t, env, fixture.Options{Name: "reflux-restart-2", Selector: shardKey + "=" + shard})
	app.AddKey(g, env.Client, "checkout-flags", "GUEST_CHECKOUT", "true")
	g.Eventually(func() error {
		prs := pullsIn(g, checkout, "")
		if len(prs) != 1 {
			return fmt.Errorf("%d pull requests in %s, want 1", len(prs), checkout)
		}
		p := prs[0]
		switch {
		case p.State != "open" || p.Head.Label != branch || p.URL != url:
			return fmt.Errorf("pull request %s of %s is %s, want the open %s of %s", p.URL, p.Head.Label, p.State, url, branch)
		case !strings.Contains(p.Body, "`/data/ONE_CLICK`") || !strings.Contains(p.Body, "`/data/GUEST_CHECKOUT`"):
			return fmt.Errorf("body does not list both flags yet:\n%s", p.Body)
		}
		return nil
	}, timeout, interval).Should(Succeed())
	rec = app.WaitRecord(g, "ConfigMap", "checkout-flags", withPullRequest)
	g.Expect(rec.Status.PullRequest).To(Equal(url), "the record still names the first pull request")
}
