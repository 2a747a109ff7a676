package handover

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
)

func TestYield(t *testing.T) {
	renewed := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	grace := 3 * time.Second
	for _, tc := range []struct {
		name      string
		listening time.Time
		heard     bool
		wanted    time.Time
		now       time.Time
		yield     bool
		left      time.Duration
	}{
		{name: "listening before the last renewal: heard the whole gap",
			listening: renewed.Add(-time.Minute), heard: true, wanted: renewed.Add(7 * time.Second), now: renewed.Add(7 * time.Second)},
		{name: "listening since the very renewal",
			listening: renewed, heard: true, wanted: renewed.Add(7 * time.Second), now: renewed.Add(7 * time.Second)},
		{name: "began listening after the renewal: yields for the grace",
			listening: renewed.Add(time.Second), heard: true, wanted: renewed.Add(7 * time.Second), now: renewed.Add(8 * time.Second),
			yield: true, left: 2 * time.Second},
		{name: "not listening yet: yields too",
			wanted: renewed.Add(7 * time.Second), now: renewed.Add(7 * time.Second), yield: true, left: grace},
		{name: "the grace has passed: takes it, so a lone replica leads",
			listening: renewed.Add(time.Second), heard: true, wanted: renewed.Add(7 * time.Second), now: renewed.Add(10 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yield, left := Yield(renewed, tc.listening, tc.heard, tc.wanted, tc.now, grace)
			if yield != tc.yield || left != tc.left {
				t.Errorf("Yield = %v, %s; want %v, %s", yield, left, tc.yield, tc.left)
			}
		})
	}
}

func TestListeningKeepsTheFirstBegin(t *testing.T) {
	var l Listening
	if _, ok := l.Since(); ok {
		t.Fatal("a webhook that never began says it listens")
	}
	first := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	l.Begin(first)
	l.Begin(first.Add(time.Hour))
	if got, ok := l.Since(); !ok || !got.Equal(first) {
		t.Fatalf("Since = %s, %v; want %s, true", got, ok, first)
	}
}

// TestLock runs real electors against kube-apiserver, over a Lease its
// last holder stopped renewing a minute ago.
func TestLock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	env := testenv.New(t, testenv.WithoutFlux())

	// The replica that began listening after the last renewal tries
	// first and retries faster, so without the yield it would lead; it
	// leaves the lease to the one that was listening before.
	t.Run("a replica that heard the gap leads first", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		renewed := deadLease(ctx, t, env, "heard-the-gap")

		cold := newCandidate(t, env, "heard-the-gap", "cold", time.Now(), time.Minute)
		go cold.run(ctx, 100*time.Millisecond)
		waitFor(ctx, t, "the cold replica to yield once", func() bool { return cold.lock.Yields() > 0 })

		warm := newCandidate(t, env, "heard-the-gap", "warm", renewed.Add(-time.Second), time.Minute)
		go warm.run(ctx, 300*time.Millisecond)
		waitFor(ctx, t, "a replica to lead", func() bool { return cold.leading() || warm.leading() })
		if !warm.leading() || cold.leading() {
			t.Fatalf("warm leads %v, cold leads %v: want the replica that heard the gap to lead", warm.leading(), cold.leading())
		}
		if n := warm.lock.Yields(); n != 0 {
			t.Errorf("the replica that heard the gap yielded %d times", n)
		}
		if holder := holderOf(ctx, t, env, "heard-the-gap"); holder != "warm" {
			t.Errorf("the Lease names %q, want warm", holder)
		}
	})

	// The yield never leaves a cluster without a leader: with no peer that
	// heard the gap, the replica that did not takes the lease once its
	// grace is over.
	t.Run("a lone replica leads after the grace", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		deadLease(ctx, t, env, "lone")

		cold := newCandidate(t, env, "lone", "cold", time.Now(), time.Second)
		go cold.run(ctx, 100*time.Millisecond)
		waitFor(ctx, t, "the lone replica to lead", cold.leading)
		if cold.lock.Yields() == 0 {
			t.Error("the replica took the lease without leaving it to a peer first")
		}
		if holder := holderOf(ctx, t, env, "lone"); holder != "cold" {
			t.Errorf("the Lease names %q, want cold", holder)
		}
	})
}

// deadLease creates a Lease whose holder last renewed it a minute ago and
// returns that time.
func deadLease(ctx context.Context, t *testing.T, env *testenv.Env, name string) time.Time {
	t.Helper()
	renewed := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("gone"),
			LeaseDurationSeconds: ptr.To[int32](2),
			AcquireTime:          &metav1.MicroTime{Time: renewed.Add(-time.Hour)},
			RenewTime:            &metav1.MicroTime{Time: renewed},
		},
	}
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatalf("creating the Lease: %v", err)
	}
	return renewed
}

func clientKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: "default", Name: name}
}

func holderOf(ctx context.Context, t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, clientKey(name), lease); err != nil {
		t.Fatalf("reading the Lease: %v", err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// candidate is one replica's elector over a Lock.
type candidate struct {
	lock *Lock
	mu   sync.Mutex
	lead bool
}

func newCandidate(t *testing.T, env *testenv.Env, lease, id string, listening time.Time, grace time.Duration) *candidate {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, "default", lease, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	var l Listening
	l.Begin(listening)
	return &candidate{lock: NewLock(inner, &l, grace, testr.New(t).WithName(id))}
}

func (c *candidate) run(ctx context.Context, retry time.Duration) {
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          c.lock,
		LeaseDuration: 20 * retry,
		RenewDeadline: 15 * retry,
		RetryPeriod:   retry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { c.set(true) },
			OnStoppedLeading: func() { c.set(false) },
		},
		Name: c.lock.Identity(),
	})
	if err != nil {
		panic(fmt.Sprintf("configuring the elector: %v", err))
	}
	le.Run(ctx)
}

func (c *candidate) set(lead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lead = lead
}

func (c *candidate) leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lead
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}
