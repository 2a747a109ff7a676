package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

func TestYields(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		busy  bool
		since time.Time
		now   time.Time
		want  bool
	}{
		{"no burst: write", false, time.Time{}, t0, false},
		{"a burst: wait", true, time.Time{}, t0, true},
		{"a burst still draining: wait on", true, t0, t0.Add(maxYield - time.Millisecond), true},
		{"a burst that never drains: write after maxYield", true, t0, t0.Add(maxYield), false},
		{"the burst drained: write at once", false, t0, t0.Add(time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(yields(tt.busy, tt.since, tt.now)).To(Equal(tt.want))
		})
	}
}

// burstEngine is the scheduler's view of an engine whose live path may be
// working through a burst.
type burstEngine struct {
	busy bool
	snap reverse.Snapshot
}

func (e *burstEngine) Snapshot(types.NamespacedName) (reverse.Snapshot, bool) { return e.snap, true }
func (e *burstEngine) AwaitingAttribution(types.NamespacedName, refluxv1.ObjectRef) bool {
	return false
}
func (e *burstEngine) Busy() bool { return e.busy }

// readCounter is an APIReader that counts write-back's reads and fails
// them: enough to tell whether a run went past the yield.
type readCounter struct{ lists int }

var errNoRead = errors.New("no apiserver in this test")

func (r *readCounter) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errNoRead
}
func (r *readCounter) List(context.Context, client.ObjectList, ...client.ListOption) error {
	r.lists++
	return errNoRead
}

// TestAWriteBackYieldsToABurstThenRuns drives writeBack through a burst:
// it waits without a request, keeps waiting while the burst lasts, and
// runs once it is through or maxYield has passed.
func TestAWriteBackYieldsToABurstThenRuns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	eng, reads := &burstEngine{busy: true}, &readCounter{}
	s := &Scheduler{opts: Options{Engine: eng, APIReader: reads, Log: logr.Discard(), Now: func() time.Time { return now },
		Notify: func(types.NamespacedName) {}},
		states: map[types.NamespacedName]*state{}}
	id := types.NamespacedName{Namespace: "flux-system", Name: "app"}

	g.Expect(s.writeBack(ctx, id)).To(MatchError(errWriteLater))
	began := now
	now = now.Add(maxYield / 2)
	g.Expect(s.writeBack(ctx, id)).To(MatchError(errWriteLater))
	g.Expect(reads.lists).To(BeZero(), "a yielding write-back reads nothing")
	g.Expect(s.states[id].yieldingSince).To(Equal(began))

	// The burst is through: the write-back goes on, to its read.
	eng.busy = false
	g.Expect(s.writeBack(ctx, id)).To(MatchError(errNoRead))
	g.Expect(reads.lists).To(Equal(1))
	g.Expect(s.states[id].yieldingSince.IsZero()).To(BeTrue())

	// A burst that never ends holds a write-back back maxYield at most.
	eng.busy = true
	g.Expect(s.writeBack(ctx, id)).To(MatchError(errWriteLater))
	now = now.Add(maxYield)
	g.Expect(s.writeBack(ctx, id)).To(MatchError(errNoRead))
	g.Expect(reads.lists).To(Equal(2))
}
