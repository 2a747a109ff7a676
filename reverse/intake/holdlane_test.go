package intake

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse"
)

func TestHoldDue(t *testing.T) {
	owner := types.NamespacedName{Namespace: "checkout", Name: "checkout"}
	k := Key{Namespace: "checkout", Name: "checkout-limits"}
	t0 := time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)
	edit := Change{Owner: owner, Seen: t0, Reverted: true}
	tests := []struct {
		name     string
		pending  *Change
		inflight bool
		denied   bool
		want     bool
	}{
		{name: "queued, and Flux would revert it", pending: &edit, want: true},
		{name: "taken by a live worker: its to decide", pending: &edit, inflight: true},
		{name: "evaluated already: nothing queued"},
		{name: "a writer Flux leaves alone", pending: &Change{Owner: owner, Seen: t0}},
		{name: "held already", pending: &Change{Owner: owner, Seen: t0, Reverted: true, Held: true}},
		{name: "the tenant may not act on it", pending: &edit, denied: true},
		{name: "a deletion: nothing to hold, but written down", pending: &Change{Owner: owner, Seen: t0,
			Deleted: &unstructured.Unstructured{}}, want: true},
		{name: "a deletion a live worker took", pending: &Change{Owner: owner, Seen: t0,
			Deleted: &unstructured.Unstructured{}}, inflight: true},
		{name: "an audited Secret write: nothing to hold", pending: &Change{Owner: owner, Seen: t0, Reverted: true,
			Audited: &reverse.AuditedWrite{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newTestIntake(t, t0)
			e := in.govern(owner, nil)
			if tt.denied {
				e.denied = map[Key]denial{k: {}}
			}
			if tt.pending != nil {
				in.pending[k] = *tt.pending
			}
			if tt.inflight {
				in.inflight[k] = edit
			}
			_, due := in.holdDue(k)
			NewWithT(t).Expect(due).To(Equal(tt.want))
		})
	}
}

// gatedHandler blocks its first change until open is closed, and records
// the changes it was handed.
type gatedHandler struct {
	open    chan struct{}
	mu      sync.Mutex
	blocked *Key
	got     map[Key]Change
}

func (h *gatedHandler) Handle(ctx context.Context, k Key, c Change, _ bool) error {
	h.mu.Lock()
	first := h.blocked == nil
	if first {
		h.blocked = &k
	}
	h.mu.Unlock()
	if first {
		select {
		case <-h.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got[k] = c
	return nil
}

func (h *gatedHandler) inFlight() *Key {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.blocked
}

func (h *gatedHandler) handled() map[Key]Change {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[Key]Change, len(h.got))
	for k, c := range h.got {
		out[k] = c
	}
	return out
}

// preholder records the holds asked of it; fail refuses one object.
type preholder struct {
	mu   sync.Mutex
	held []Key
	fail string
}

func (p *preholder) Prehold(_ context.Context, k Key, _ Change) (bool, error) {
	if k.Name == p.fail {
		return false, errors.New("the apiserver refused the hold")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = append(p.held, k)
	return true, nil
}

func got(h *gatedHandler, k Key) Change { return h.handled()[k] }

func (p *preholder) keys() []Key {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Key(nil), p.held...)
}

// TestHoldLaneHoldsWhatWaitsBehindABusyLiveLane: with the only live
// worker busy, the changes queued behind it are held ahead of their
// evaluation (a deletion written down), except those Flux would not
// revert and the one in flight;
// the live lane then gets them marked held, so it knows the hold is its
// to keep or release. A hold that fails leaves the change to the live
// lane, unmarked.
func TestHoldLaneHoldsWhatWaitsBehindABusyLiveLane(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "checkout", Name: "checkout"}
	h := &gatedHandler{open: make(chan struct{}), got: map[Key]Change{}}
	ph := &preholder{fail: "refused"}
	in, err := New(Options{Writers: managers{"vault-agent"}, Live: store{synced: true}, Handler: h, Preholder: ph,
		Log: logr.Discard(), LiveWorkers: 1, HoldAfter: 10 * time.Millisecond})
	g.Expect(err).NotTo(HaveOccurred())
	in.govern(owner, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { in.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	key := func(name string) Key { return Key{Namespace: "checkout", Name: name} }
	edit := Change{Owner: owner, Seen: time.Now(), Reverted: true}
	in.enqueue(key("first"), edit)
	g.Eventually(h.inFlight).ShouldNot(BeNil(), "the live worker is busy with the first change")
	for _, name := range []string{"limits", "flags", "refused"} {
		in.enqueue(key(name), edit)
	}
	in.enqueue(key("flux-own"), Change{Owner: owner, Seen: time.Now(), Benign: true})
	in.enqueue(key("deleted"), Change{Owner: owner, Seen: time.Now(), Deleted: &unstructured.Unstructured{}})

	g.Eventually(ph.keys).Should(ConsistOf(key("limits"), key("flags"), key("deleted")),
		"a deletion is written down ahead of its evaluation")
	close(h.open)
	g.Eventually(func() int { return len(h.handled()) }).Should(Equal(6))
	g.Expect(got(h, key("deleted")).Deleted).NotTo(BeNil(), "the live lane still decides the deletion")
	g.Expect(got(h, key("deleted")).Held).To(BeFalse(), "nothing was held for Forget to release")
	got := h.handled()
	g.Expect(got[key("limits")].Held).To(BeTrue())
	g.Expect(got[key("flags")].Held).To(BeTrue())
	g.Expect(got[key("refused")].Held).To(BeFalse(), "a hold that failed is not the live lane's to release")
	g.Expect(got[key("refused")].Reverted).To(BeTrue(), "and the change is kept whole")
	g.Expect(got[key("first")].Held).To(BeFalse(), "the change in flight was never the hold lane's")
	g.Expect(ph.keys()).NotTo(ContainElement(key("first")))
	g.Expect(ph.keys()).NotTo(ContainElement(key("flux-own")), "Flux's own write is not held")
}

// A Kustomization that stops being governed leaves the holds the hold
// lane took for its queued and in-flight changes to Forget, which owes
// their release: no evaluation of an ungoverned Kustomization releases
// them.
func TestForgetOwesTheHoldLanesHolds(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "checkout", Name: "checkout"}
	other := types.NamespacedName{Namespace: "payments", Name: "payments"}
	t0 := time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)
	in := newTestIntake(t, t0)
	e := in.govern(owner, nil)
	in.govern(other, nil)
	key := func(name string) Key { return Key{Namespace: "checkout", Name: name} }
	e.parked[key("parked")] = Change{Owner: owner, Seen: t0, Reverted: true, Held: true}
	in.pending[key("queued")] = Change{Owner: owner, Seen: t0, Reverted: true}
	in.pending[key("unheld")] = Change{Owner: owner, Seen: t0, Reverted: true}
	in.inflight[key("taken")] = Change{Owner: owner, Seen: t0, Reverted: true}
	in.pending[key("theirs")] = Change{Owner: other, Seen: t0, Reverted: true}
	for _, name := range []string{"queued", "taken", "theirs"} {
		in.markHeld(key(name))
	}

	left, governed := in.Forget(owner)
	g.Expect(governed).To(BeTrue())
	g.Expect(left.Parked).To(HaveLen(3))
	g.Expect(left.Parked).To(HaveKey(key("parked")))
	g.Expect(left.Parked).To(HaveKey(key("queued")), "held while queued")
	g.Expect(left.Parked).To(HaveKey(key("taken")), "held as a live worker took it")
	g.Expect(left.Parked[key("queued")].Held).To(BeTrue())
}
