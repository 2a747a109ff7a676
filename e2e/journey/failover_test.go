package journey

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// Short leader election timings, through reflux's Flux-style flags, so a
// failover fits in a test. The lease outlasts the renew deadline by
// seconds: a standby acts from the one and a new leader leads from the
// other, and the test works in between.
const (
	leaseDuration = 20 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = time.Second
)

// leader returns the one process whose leader_election_master_status is 1,
// scraped over HTTP, or an error when none or both claim it.
func leader(g Gomega, ps ...*testenv.RefluxProcess) (*testenv.RefluxProcess, error) {
	var leaders []*testenv.RefluxProcess
	for _, p := range ps {
		if v, _ := fixture.Metric(g, p.Process, "leader_election_master_status", map[string]string{"name": "reflux-leader-election"}); v == 1 {
			leaders = append(leaders, p)
		}
	}
	if len(leaders) != 1 {
		return nil, fmt.Errorf("%d leaders", len(leaders))
	}
	return leaders[0], nil
}

// TestLeaderFailover (scenario 8): two replicas elect a leader through the
// Lease config/rbac lets them keep in reflux-system. The leader is killed
// with SIGKILL; the other takes over within the lease time, and a drift
// made during the failover is recorded once, on the one branch.
//
// While no replica leads, the other replica stands by (reverse/standby):
// once the killed leader's lease is past its renew deadline, it holds the
// edits made since the leader last renewed it, and every edit after, so
// that a reconcile of Flux before the next leader lists them reverts
// none (issue 22: most of the soak's losses were such edits).
func TestLeaderFailover(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	var replicas []*testenv.RefluxProcess
	for _, name := range []string{"reflux-replica-a", "reflux-replica-b"} {
		replicas = append(replicas, fixture.StartReflux(t, env, fixture.Options{Name: name, Selector: shardKey + "=failover",
			Args: []string{"--enable-leader-election",
				"--leader-election-lease-duration=" + leaseDuration.String(),
				"--leader-election-renew-deadline=" + renewDeadline.String(),
				"--leader-election-retry-period=" + retryPeriod.String()}}))
	}
	var first *testenv.RefluxProcess
	g.Eventually(func() (err error) {
		first, err = leader(g, replicas...)
		return err
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	f := fixture.NewApp(t, env, "failover", fixture.AppOptions{Labels: map[string]string{shardKey: "failover"},
		Files: flagFiles("cart-flags", "search-flags", "probe-flags")})

	// Before the failover: a drift the leader proposes on a branch.
	f.AddKey(g, alice.Client, "cart-flags", "SAVE_FOR_LATER", "true")
	before := f.WaitRecord(g, "ConfigMap", "cart-flags", fixture.Pushed)
	g.Expect(fixture.Branches(t, env, f.Repo)).To(ConsistOf(before.Status.Branch))
	killedHolder, err := leaseHolder()
	g.Expect(err).NotTo(HaveOccurred())
	other := replicas[0]
	if other == first {
		other = replicas[1]
	}
	standbyHolds := func() float64 {
		v, _ := fixture.Metric(g, other.Process, "reflux_standby_holds_total", nil)
		return v
	}
	g.Expect(standbyHolds()).To(BeZero(), "a standby holds nothing while the leader leads")

	g.Expect(first.Kill()).To(Succeed())
	killed := time.Now()
	f.AddKey(g, alice.Client, "search-flags", "FUZZY", "true") // during the failover

	// The standby holds the edit made after the leader's last renewal,
	// then one made while it acts, each while the lease still names the
	// killed leader: no replica leads yet.
	heldWhileLeaderless := func(name string) {
		var holder string
		g.Eventually(func() (bool, error) {
			if !fixture.Held(f.Get(g, name, &corev1.ConfigMap{})) {
				return false, nil
			}
			var err error
			holder, err = leaseHolder()
			return err == nil, err
		}, leaseDuration, 100*time.Millisecond).Should(BeTrue(), "%s is held", name)
		g.Expect(holder).To(Equal(killedHolder), "%s was held before a replica led again", name)
	}
	heldWhileLeaderless("search-flags")
	f.AddKey(g, alice.Client, "probe-flags", "DARK_MODE", "true")
	heldWhileLeaderless("probe-flags")
	// Flux reconciles before the next leader has listed anything, and
	// leaves both edits alone.
	f.Reconcile(g, f.Kustomization().Name)
	g.Expect(leaseHolder()).To(Equal(killedHolder), "Flux reconciled before a replica led again")
	g.Expect(f.Get(g, "search-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("FUZZY", "true"))
	g.Expect(f.Get(g, "probe-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("DARK_MODE", "true"))
	g.Expect(standbyHolds()).To(BeNumerically("==", 2), "the standby counts its holds")

	g.Eventually(func() (err error) {
		p, err := leader(g, other)
		if err == nil && p != other {
			err = fmt.Errorf("%s leads", p.Name)
		}
		return err
	}, leaseDuration+2*retryPeriod+2*time.Second, 200*time.Millisecond).Should(Succeed())
	t.Logf("%s took over %s after the leader was killed", other.Name, time.Since(killed))

	during := f.WaitRecord(g, "ConfigMap", "search-flags", fixture.Pushed)
	probe := f.WaitRecord(g, "ConfigMap", "probe-flags", fixture.Pushed)
	g.Expect(f.Records(g, "ConfigMap", "search-flags")).To(HaveLen(1), "recorded once")
	g.Expect(f.Records(g, "ConfigMap", "cart-flags")).To(HaveLen(1))
	g.Expect(during.Status.Branch).To(Equal(before.Status.Branch), "every Merge field goes on the Kustomization's one branch")
	g.Expect(probe.Status.Branch).To(Equal(before.Status.Branch))
	// The records are pushed (proposed): every branch there will be is there.
	g.Expect(fixture.Branches(t, env, f.Repo)).To(ConsistOf(before.Status.Branch), "no duplicate branch")
	g.Expect(fixture.Held(f.Get(g, "search-flags", &corev1.ConfigMap{}))).To(BeTrue())
	dir := fixture.CloneBranch(t, env, f.Repo, during.Status.Branch)
	_, added, _ := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(added).To(ConsistOf(`  SAVE_FOR_LATER: "true"`, `  FUZZY: "true"`, `  DARK_MODE: "true"`))
}

// leaseHolder is who holds reflux's leader election Lease now.
func leaseHolder() (string, error) {
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.RefluxNamespace, Name: "reflux-leader-election"}, lease); err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", errors.New("the Lease names no holder")
	}
	return *lease.Spec.HolderIdentity, nil
}
