package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestADeletionNoLeaderSawIsRecordedOnTakeover (issue 22 §1): the leader
// stops answering (SIGSTOP) and, before its lease runs out, someone
// deletes an object and Flux recreates it. No watch of either replica saw
// it go; the new leader's watches list the recreated object and its
// resync finds nothing missing. Only the audit log knows, and every
// replica keeps the deletions it sends, leading or not: the replica that
// takes over replays them and records the deletion, naming who made it.
// The soak lost most of its deletions this way ("deleted live, and no
// record says so"). The lease is long here, so that Flux has recreated the
// object before the other replica takes over, whatever the machine's load.
func TestADeletionNoLeaderSawIsRecordedOnTakeover(t *testing.T) {
	g := NewWithT(t)
	gap := deleteWhileNoneLeads(t, g, "takeover", nil)
	f := gap.f
	rec := f.WaitRecord(g, "ConfigMap", "gone-flags", fixture.HasField(refluxv1.WholeObjectPointer))
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	g.Expect(rec.Spec.Fields[0].ChangeType).To(Equal(refluxv1.ChangeRemove))
	g.Expect(rec.Spec.LastModifier).NotTo(BeNil())
	g.Expect(rec.Spec.LastModifier.Operation).To(Equal(refluxv1.DeleteOperation))
	g.Expect(rec.Spec.LastModifier.User).NotTo(BeEmpty(), "named from the audit log")
	g.Expect(f.Records(g, "ConfigMap", "kept-flags")).To(BeEmpty(), "nothing happened to it")

	// The paused replica wakes past its lease and must step down without
	// writing: the record stays one.
	g.Expect(gap.resume()).To(Succeed())
	g.Consistently(func() []refluxv1.Drift { return f.Records(g, "ConfigMap", "gone-flags") }, 3*time.Second, 250*time.Millisecond).
		Should(HaveLen(1))
}

// TestTheReplicaThatHeardTheGapTakesOver (issue 22 §1): a killed leader
// is restarted at once in its slot, as a Deployment's pod is, and races
// its peer for the lease. The restarted replica began listening to the
// audit log after the dead leader last renewed, so it missed the
// deletions of the gap that the replay above records, and it leaves the
// lease to its peer (internal/handover). The soak saw the restarted one
// win about half the takeovers before; three kills in a row all go to the
// peer.
func TestTheReplicaThatHeardTheGapTakesOver(t *testing.T) {
	g := NewWithT(t)
	fixture.Shared(t)
	ctx := context.Background()
	superCtx, stop := context.WithCancel(ctx)
	reps, err := startReplicas(superCtx, t)
	g.Expect(err).NotTo(HaveOccurred())
	defer reps.wait()
	defer stop()
	leader, err := reps.leader(ctx, leaderWait)
	g.Expect(err).NotTo(HaveOccurred())
	for round := range 3 {
		var peer *testenv.RefluxProcess
		g.Eventually(func() bool {
			peer = reps.peerOf(leader) // restarted, after the round before
			select {
			case <-peer.Done():
				return false
			default:
				return true
			}
		}, fixture.Timeout, fixture.Interval).Should(BeTrue(), "round %d: the peer runs", round)
		// The peer has listened since before the leader last renewed: it
		// is ready, and the leader renewed twice since, the first time
		// perhaps before the peer's audit webhook began to serve.
		g.Expect(renewedTwiceAfter(ctx, time.Now())).To(Succeed())
		g.Expect(leader.Kill()).To(Succeed())
		next, err := reps.leader(ctx, leaderWait)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(next).To(BeIdenticalTo(peer), "round %d: the replica restarted in the killed leader's slot took the lease", round)
		leader = next
	}
}

// renewedTwiceAfter waits until the leader Lease was renewed twice after
// t.
func renewedTwiceAfter(ctx context.Context, t time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, fixture.Timeout)
	defer cancel()
	for range 2 {
		for {
			lease := &coordinationv1.Lease{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.RefluxNamespace, Name: leaseName}, lease); err != nil {
				return err
			}
			if r := lease.Spec.RenewTime; r != nil && r.After(t) {
				t = r.Time
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the Lease was not renewed after %s: %w", t, ctx.Err())
			case <-time.After(100 * time.Millisecond): // polling the Lease
			}
		}
	}
	return nil
}

// TestADeletionNoLeaderSawIsWrittenDownBeforeTheRender (issue 22 §1): as
// above, a deletion made while no replica led, and undone by Flux before
// the next one led, is known only to the audit log. The replica that
// takes over writes it down as a Pending record as soon as it governs the
// Kustomization, before its render lands: in the soak, leaders killed
// every half minute never got to a render, and those deletions died
// with the replicas that had heard them. Renders are held back (the
// gate file) once the first leader has rendered, so only that early
// write-down can make the record; once the gate goes, the render
// completes it.
func TestADeletionNoLeaderSawIsWrittenDownBeforeTheRender(t *testing.T) {
	g := NewWithT(t)
	gate := filepath.Join(t.TempDir(), "hold-renders")
	gap := deleteWhileNoneLeads(t, g, "early", func() { g.Expect(os.WriteFile(gate, nil, 0o600)).To(Succeed()) },
		"--render-gate-file="+gate)
	f := gap.f
	rec := f.WaitRecord(g, "ConfigMap", "gone-flags", func(d *refluxv1.Drift) error {
		if d.Status.State != refluxv1.DriftPending {
			return fmt.Errorf("record %s is %q, want Pending while no render lands", d.Name, d.Status.State)
		}
		return nil
	})
	g.Expect(rec.Spec.LastModifier).NotTo(BeNil())
	g.Expect(rec.Spec.LastModifier.Operation).To(Equal(refluxv1.DeleteOperation))
	g.Expect(rec.Spec.LastModifier.User).NotTo(BeEmpty(), "named from the audit log")
	g.Expect(f.Records(g, "ConfigMap", "kept-flags")).To(BeEmpty(), "nothing happened to it")

	g.Expect(os.Remove(gate)).To(Succeed())
	rec = f.WaitRecord(g, "ConfigMap", "gone-flags", fixture.HasField(refluxv1.WholeObjectPointer))
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	g.Expect(rec.Spec.Fields[0].ChangeType).To(Equal(refluxv1.ChangeRemove))
}

// gap is what deleteWhileNoneLeads leaves: the app, and its leaders
// before and after the gap.
type gap struct {
	f           *fixture.App
	first, next *testenv.RefluxProcess
	// resume wakes the first leader, paused since the gap began; the
	// test's cleanup does it otherwise.
	resume func() error
}

// deleteWhileNoneLeads runs two replicas over an app of two ConfigMaps,
// with a lease long enough that Flux recreates what is deleted before
// the other replica takes over, whatever the machine's load. Once the
// first leader governs the app cleanly, it runs beforeGap (when not nil),
// pauses the leader, deletes gone-flags, has Flux recreate it, and
// returns once the other replica leads: no watch of either saw the
// deletion, and only the audit log knows of it.
func deleteWhileNoneLeads(t *testing.T, g Gomega, name string, beforeGap func(), args ...string) gap {
	t.Helper()
	fixture.Shared(t)
	ctx := context.Background()
	files := map[string]string{"kustomization.yaml": fixture.Kustomization("flags.yaml"), "flags.yaml": "" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone-flags\ndata:\n  ENABLED: \"false\"\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept-flags\ndata:\n  ENABLED: \"false\"\n"}
	f := fixture.NewApp(t, env, name, fixture.AppOptions{Files: files, Unwatched: true})

	superCtx, stop := context.WithCancel(ctx)
	reps, err := startReplicas(superCtx, t, append([]string{"--leader-election-lease-duration=40s",
		"--leader-election-renew-deadline=30s"}, args...)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(reps.wait) // after stop, below
	t.Cleanup(stop)
	first, err := reps.leader(ctx, leaderWait)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.WaitClean(ctx, f.Name)).To(Succeed())
	if beforeGap != nil {
		beforeGap()
	}

	g.Expect(first.Pause()).To(Succeed())
	var once sync.Once
	var resumed error
	resume := func() error {
		once.Do(func() { resumed = first.Continue() })
		return resumed
	}
	t.Cleanup(func() { _ = resume() })
	gone := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: f.Name, Name: "gone-flags"}
	g.Expect(env.Client.Get(ctx, key, gone)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, gone)).To(Succeed())
	g.Expect(env.Reconcile(ctx, f.Kustomizations[f.Name])).To(Succeed())
	g.Eventually(func(g Gomega) {
		back := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, key, back)).To(Succeed())
		g.Expect(back.UID).NotTo(Equal(gone.UID))
	}, fixture.Timeout, fixture.Interval).Should(Succeed(), "Flux recreated it")
	g.Expect(reps.leaderOnce(ctx)).Error().To(HaveOccurred(), "no replica has taken over yet: the test would prove nothing")

	next, err := reps.leader(ctx, leaderWait)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next).NotTo(BeIdenticalTo(first))
	return gap{f: f, first: first, next: next, resume: resume}
}
