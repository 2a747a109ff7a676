package intake

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse/drift"
)

func TestChangesCoalesce(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	flux := Change{Owner: owner, Seen: t0.Add(time.Second), From: "12", Benign: true}
	human := Change{Owner: owner, Seen: t0, From: "10", Reverted: true}

	c := flux.merge(human)
	g.Expect(c.Seen).To(Equal(t0), "the first sighting counts for latency")
	g.Expect(c.From).To(Equal("10"), "clean-since is from before the first change")
	g.Expect(c.Benign).To(BeFalse(), "one human writer makes the batch worth a look")
	g.Expect(c.Reverted).To(BeTrue(), "and worth a hold")

	g.Expect(flux.merge(Change{})).To(Equal(flux), "nothing earlier: unchanged")
	resync := Change{Owner: owner}
	g.Expect(resync.merge(flux).Seen).To(Equal(flux.Seen), "a resync keeps a live change's sighting")
	g.Expect(resync.merge(flux).Benign).To(BeFalse(), "a resync always looks")
}

// TestEditsCoalesce: a queued change keeps what the watch saw after each
// write Flux reverts, oldest first, the latest MaxEdits of them, so that
// an edit Flux undoes before a worker looks is still known.
func TestEditsCoalesce(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}
	edit := func(rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetResourceVersion(rv)
		return u
	}
	versions := func(c Change) []string {
		var out []string
		for _, e := range c.Edits {
			out = append(out, e.GetResourceVersion())
		}
		return out
	}
	c := Change{Owner: owner, Reverted: true, Edits: []*unstructured.Unstructured{edit("1")}}
	flux := Change{Owner: owner, Benign: true}
	c = flux.merge(c)
	g.Expect(versions(c)).To(Equal([]string{"1"}), "Flux's revert after the edit keeps the edit")
	for _, rv := range []string{"2", "3", "4", "5"} {
		c = Change{Owner: owner, Reverted: true, Edits: []*unstructured.Unstructured{edit(rv)}}.merge(c)
	}
	g.Expect(versions(c)).To(Equal([]string{"2", "3", "4", "5"}), "the latest MaxEdits, oldest first")
	g.Expect(versions(Change{Owner: owner}.merge(c))).To(Equal([]string{"2", "3", "4", "5"}), "a resync keeps them")
}

// A resync that records a drift before the live worker gets to it still
// times the live change: queued, in flight or parked, whichever is first.
func TestSightingOfAChangeNotYetEvaluated(t *testing.T) {
	owner := types.NamespacedName{Namespace: "checkout", Name: "checkout"}
	k := Key{Namespace: "checkout", Name: "checkout-limits"}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name                      string
		pending, inflight, parked *Change
		want                      time.Time
	}{
		{name: "nothing seen: a resync's own finding", want: time.Time{}},
		{name: "queued", pending: &Change{Owner: owner, Seen: t0}, want: t0},
		{name: "taken by a live worker", inflight: &Change{Owner: owner, Seen: t0}, want: t0},
		{name: "parked until the render is current", parked: &Change{Owner: owner, Seen: t0}, want: t0},
		{name: "the earliest of them", pending: &Change{Owner: owner, Seen: t0.Add(2 * time.Second)},
			inflight: &Change{Owner: owner, Seen: t0.Add(time.Second)}, parked: &Change{Owner: owner, Seen: t0}, want: t0},
		{name: "a record's change carries no sighting", pending: &Change{Owner: owner}, want: time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newTestIntake(t, t0)
			e := in.govern(owner, nil)
			if tt.pending != nil {
				in.pending[k] = *tt.pending
			}
			if tt.inflight != nil {
				in.inflight[k] = *tt.inflight
			}
			if tt.parked != nil {
				e.parked[k] = *tt.parked
			}
			NewWithT(t).Expect(in.Sighting(owner, k)).To(Equal(tt.want))
		})
	}
}

func TestTakeKeepsTheChangeInFlightUntilDone(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "checkout", Name: "checkout"}
	k := Key{Namespace: "checkout", Name: "checkout-flags"}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	in := newTestIntake(t, t0)
	in.pending[k] = Change{Owner: owner, Seen: t0}
	c := in.take(k)
	g.Expect(c.Seen).To(Equal(t0))
	g.Expect(in.Sighting(owner, k)).To(Equal(t0), "in flight")
	in.done(k)
	g.Expect(in.Sighting(owner, k)).To(BeZero(), "evaluated")
}

// staleOnce answers the first look at each object with drift.ErrStale, as
// a dry run conditioned on the cache's resourceVersion does when the hold
// lane's hold landed first, and records every look.
type staleOnce struct {
	mu    sync.Mutex
	looks map[Key]int
}

func (s *staleOnce) Handle(_ context.Context, k Key, _ Change, _ bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.looks[k]++
	if s.looks[k] == 1 {
		return fmt.Errorf("detecting drift: %w: ConfigMap at resourceVersion 7", drift.ErrStale)
	}
	return nil
}

func (s *staleOnce) count(k Key) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.looks[k]
}

// TestAStaleEvaluationIsLookedAtAgain: a change evaluated against a copy
// older than the apiserver's is not dropped. The newer version's event
// may never queue it again, since reflux's own hold is not a change the
// watch passes on (the burst saw 84 of 1,000 edits held and never
// recorded): the change stays, with its first sighting, and the live
// queue takes it again.
func TestAStaleEvaluationIsLookedAtAgain(t *testing.T) {
	g := NewWithT(t)
	h := &staleOnce{looks: map[Key]int{}}
	in, err := New(Options{Writers: managers{}, Live: store{synced: true}, Handler: h, Log: logr.Discard()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { in.live.ShutDown(); in.resync.ShutDown(); in.holds.ShutDown() })
	owner := types.NamespacedName{Namespace: "flux-system", Name: "apps"}
	in.govern(owner, nil)
	k := Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "settings"}
	seen := time.Date(2026, 12, 7, 6, 27, 3, 0, time.UTC)
	in.enqueue(k, Change{Owner: owner, Seen: seen, Reverted: true})

	g.Expect(in.processLive(context.Background())).To(BeTrue())
	g.Expect(h.count(k)).To(Equal(1))
	g.Expect(in.pending).To(HaveKeyWithValue(k, HaveField("Seen", seen)), "kept, with its first sighting")
	g.Eventually(in.live.Len).Should(Equal(1), "queued again after the backoff")

	g.Expect(in.processLive(context.Background())).To(BeTrue())
	g.Expect(h.count(k)).To(Equal(2), "looked at again")
	g.Expect(in.pending).NotTo(HaveKey(k), "decided the second time")
}

// TestBacklogCountsBothLanes: write-back yields to what waits for a
// worker on either lane, and to nothing a worker has taken.
func TestBacklogCountsBothLanes(t *testing.T) {
	g := NewWithT(t)
	in := newTestIntake(t, time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC))
	g.Expect(in.Backlog()).To(BeZero())
	key := func(n int) Key {
		return Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: fmt.Sprint("cm-", n)}
	}
	for n := range 3 {
		in.live.Add(key(n))
	}
	in.holds.Add(key(0))
	g.Expect(in.Backlog()).To(Equal(4))
	k, _ := in.live.Get()
	g.Expect(in.Backlog()).To(Equal(3), "a change a worker took is no longer waiting")
	in.live.Done(k)
	g.Expect(in.Busy()).To(BeFalse())
	for n := 3; in.Backlog() < BurstBacklog; n++ {
		in.live.Add(key(n))
	}
	g.Expect(in.Busy()).To(BeTrue(), "a burst")
}
