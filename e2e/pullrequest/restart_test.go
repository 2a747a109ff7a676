package pullrequest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
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

	first := startShardReflux(t, "reflux-restart", shard)
	g.Expect(waitWatched(ctx, k)).To(Succeed())
	addKey(g, checkout, "checkout-flags", "ONE_CLICK", "true")
	rec := recordIn(g, checkout, "checkout-flags", withPullRequest)
	branch, url := rec.Status.Branch, rec.Status.PullRequest
	prs := pullsIn(g, checkout, "")
	g.Expect(prs).To(HaveLen(1))
	g.Expect(prs[0].URL).To(Equal(url))
	g.Expect(prs[0].Head.Label).To(Equal(branch))
	g.Expect(first.Kill()).To(Succeed())

	startShardReflux(t, "reflux-restart-2", shard)
	addKey(g, checkout, "checkout-flags", "GUEST_CHECKOUT", "true")
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
	rec = recordIn(g, checkout, "checkout-flags", withPullRequest)
	g.Expect(rec.Status.PullRequest).To(Equal(url), "the record still names the first pull request")
}

// startShardReflux runs the reflux binary as the installed ServiceAccount,
// governing only the Kustomizations and policies of shard, and stops it
// when the test ends (a killed one only has its log closed).
func startShardReflux(t *testing.T, name, shard string) *testenv.RefluxProcess {
	t.Helper()
	binaryLogs = append(binaryLogs, filepath.Join(env.Dir, name+".log"))
	r, err := testenv.StartReflux(context.Background(), env, testenv.RefluxOptions{Name: name, Args: []string{
		"--watch-label-selector=" + shardKey + "=" + shard,
		"--log-level=debug",
		// Gitea speaks plain HTTP on loopback.
		"--insecure-allow-http",
		"--concurrent=2",
		"--artifact-retry-interval=2s",
		"--policy-retry-interval=2s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// addKey adds a key to a live ConfigMap as `kubectl edit` does, again on
// a conflict with reflux's hold.
func addKey(g Gomega, namespace, name, key, value string) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
			return err
		}
		cm.Data[key] = value
		return env.Client.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))
	})).To(Succeed())
}
