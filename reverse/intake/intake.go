package intake

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// Handler evaluates one object's change and acts on it: the rest of the
// engine's walk. resync is true for the resync's own checks.
type Handler interface {
	Handle(ctx context.Context, k Key, c Change, resync bool) error
}

// Writers classifies a change by its writers (reverse/drift.Detector).
type Writers interface {
	// Allowed reports whether manager's writes are never drift.
	Allowed(manager string) bool
	// Reverted reports whether Flux undoes everything manager writes.
	Reverted(manager string) bool
}

// LiveStore is what the intake needs of the live watches' cache.
type LiveStore interface {
	// Synced reports whether the watch of gvk has listed every object.
	Synced(gvk schema.GroupVersionKind) bool
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
}

// Metrics counts the changes kept (reverse/metrics.Metrics).
type Metrics interface {
	SetParked(ks types.NamespacedName, n int)
}

// Options wire an Intake. Writers, Live and Handler are required.
type Options struct {
	Writers Writers
	Live    LiveStore
	Handler Handler
	Metrics Metrics
	// Notify tells the Kustomization reconciler that something it reports
	// changed: a resync completed, a permission was refused or granted.
	Notify func(types.NamespacedName)
	Log    logr.Logger
	Now    func() time.Time
	// LiveWorkers evaluate live changes; default 4.
	LiveWorkers int
	// ResyncWorkers evaluate resyncs, apart from live changes so that a
	// resync never delays one; default 1.
	ResyncWorkers int
	// Preholder, when set, runs the hold lane (holdlane.go): a change
	// Flux would revert that waited HoldAfter in the live queue is held
	// ahead of its evaluation, by HoldWorkers (default LiveWorkers).
	Preholder   Preholder
	HoldAfter   time.Duration
	HoldWorkers int
}

// Intake keeps every change of a governed object until it is evaluated.
// Its state is its own, behind its own lock; other stages read it only
// through its methods, and get copies.
type Intake struct {
	opts   Options
	live   workqueue.TypedRateLimitingInterface[Key]
	resync workqueue.TypedRateLimitingInterface[Key]
	// holds is the hold lane's queue (holdlane.go).
	holds workqueue.TypedDelayingInterface[Key]
	// syncWait spaces a resync item's looks at a watch not synced yet.
	syncWait workqueue.TypedRateLimiter[Key]
	// denyWait spaces the looks again at a change a permission refused.
	denyWait workqueue.TypedRateLimiter[Key]

	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
	// pending holds what is known of each queued live change.
	pending map[Key]Change
	// inflight holds the live changes a worker has taken and is
	// evaluating, so a resync that records the drift first still knows
	// when the change reached the watch (Sighting).
	inflight map[Key]Change
	// unowned are audited Secret writes no current render declares, kept
	// while a render that may declare them is not current (secrets.go).
	unowned map[Key]unownedWrite
	// resyncItems are the objects queued for a resync, with their owner.
	resyncItems map[Key]Change
	// attributionTries counts re-evaluations waiting for the audit log.
	attributionTries map[Key]int
	// deleterTries counts looks at a deletion waiting for the audit log
	// to name who deleted the object: apart from attributionTries, whose
	// entries also hold write-back back.
	deleterTries map[Key]int
}

// New returns an Intake; call Start to run its workers.
func New(opts Options) (*Intake, error) {
	if opts.Writers == nil || opts.Live == nil || opts.Handler == nil {
		return nil, errors.New("intake: Writers, Live and Handler are required")
	}
	if opts.LiveWorkers < 1 {
		opts.LiveWorkers = 4
	}
	if opts.ResyncWorkers < 1 {
		opts.ResyncWorkers = 1
	}
	if opts.HoldAfter <= 0 {
		opts.HoldAfter = DefaultHoldAfter
	}
	if opts.HoldWorkers < 1 {
		opts.HoldWorkers = opts.LiveWorkers
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Notify == nil {
		opts.Notify = func(types.NamespacedName) {}
	}
	return &Intake{
		opts: opts,
		live: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "reflux-live"}),
		resync: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "reflux-resync"}),
		holds:            workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[Key]{Name: "reflux-hold"}),
		syncWait:         workqueue.NewTypedItemExponentialFailureRateLimiter[Key](250*time.Millisecond, syncWaitMax),
		denyWait:         NewDenyWait(),
		entries:          map[types.NamespacedName]*entry{},
		pending:          map[Key]Change{},
		inflight:         map[Key]Change{},
		unowned:          map[Key]unownedWrite{},
		resyncItems:      map[Key]Change{},
		attributionTries: map[Key]int{},
		deleterTries:     map[Key]int{},
	}, nil
}

// Start runs the live and resync workers until ctx ends.
func (in *Intake) Start(ctx context.Context) {
	var wg sync.WaitGroup
	run := func(n int, next func(context.Context) bool) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next(ctx) {
				}
			}()
		}
	}
	run(in.opts.LiveWorkers, in.processLive)
	run(in.opts.ResyncWorkers, in.processResync)
	if in.opts.Preholder != nil {
		run(in.opts.HoldWorkers, in.processHold)
	}
	<-ctx.Done()
	in.live.ShutDown()
	in.resync.ShutDown()
	in.holds.ShutDown()
	wg.Wait()
}

func (in *Intake) now() time.Time { return in.opts.Now() }
