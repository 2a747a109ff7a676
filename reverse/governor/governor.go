package governor

import (
	"context"
	"fmt"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Governed is what the engine needs to know of one governed Kustomization.
// The Kustomization reconciler publishes it; it is never changed after, so
// workers may read it without locks.
type Governed struct {
	// Kustomization and Policy are deep copies.
	Kustomization *kustomizev1.Kustomization
	Policy        *refluxv1.ReverseSyncPolicy
	Classifier    *classify.Classifier
	// SourceRevision is the revision the source serves now; "" when
	// unknown. A revision Flux has not applied yet means a rollout.
	SourceRevision string
	// SourceInterval is the source's interval: branch checks run at most
	// once per interval.
	SourceInterval time.Duration
	// RepoURL is the Git repository write-back pushes to; "" when the
	// source is not a GitRepository.
	RepoURL string
	// SubstituteFrom is the resolved postBuild substitution data.
	SubstituteFrom []kustomize.SubstituteSource
	// Identity is the user the Kustomization's dry runs, holds and
	// releases go out as (reverse/tenancy.Identity); "" is reflux's own.
	Identity string
}

// Key returns the Kustomization's key.
func (g *Governed) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: g.Kustomization.Namespace, Name: g.Kustomization.Name}
}

// mayHold reports whether the policy lets reflux hold anything (it does
// not under spec.hold: Never).
func (g *Governed) mayHold() bool {
	return g.Classifier == nil || g.Classifier.MayHold()
}

func (g *Governed) ref() refluxv1.KustomizationRef {
	return refluxv1.KustomizationRef{Namespace: g.Kustomization.Namespace, Name: g.Kustomization.Name}
}

// Options wire a Governor. Client, APIReader, Detector, Holder, Live and
// Sealer are required.
type Options struct {
	// Client reads Drift records from the cache and writes them.
	Client client.Client
	// APIReader reads records straight from the apiserver, where a cached
	// read could be behind a write the engine just made.
	APIReader client.Reader
	Detector  Detector
	Holder    Holder
	Live      LiveStore
	// Sealer seals every record the engine writes, and the engine acts
	// only on records whose seal verifies (see reverse/record).
	Sealer *record.Sealer
	// Renders, when set, forgets a Kustomization's renders with it.
	Renders Renders
	// Writer writes drift to Git; nil reports without writing.
	Writer Writer
	// Targets resolves what Writer needs from the cluster.
	Targets Targets
	// Attributor names users from the audit log; nil skips attribution.
	Attributor Attributor
	// Marker annotates audit-derived manual hotfixes; nil leaves them
	// unannotated (see intent.go).
	Marker Marker
	// Events records events on Kustomizations; nil records none.
	Events EventRecorder
	// Metrics takes the engine's measurements; nil takes none.
	Metrics *Metrics
	// Impersonation acts as a Kustomization's Identity; nil acts as
	// reflux itself for every Kustomization.
	Impersonation Impersonation
	// InShard reports whether this reflux may act on records of a
	// Kustomization it does not govern: one its --watch-label-selector
	// selects, or one that is gone. Shards then never both act on one
	// record. Nil allows every Kustomization.
	InShard func(ctx context.Context, ks types.NamespacedName) (bool, error)
	// Notify tells the Kustomization reconciler that something it reports
	// changed: a write-back finished, a resync completed.
	Notify func(types.NamespacedName)
	Log    logr.Logger

	// LiveWorkers evaluate live changes; default 4.
	LiveWorkers int
	// ResyncWorkers evaluate resyncs, apart from live changes so that a
	// resync never delays one; default 1.
	ResyncWorkers int
	// ResyncQPS bounds the dry runs a resync makes per second, so that it
	// leaves the client's rate limit to the live path; default 10.
	ResyncQPS float64
	// WriteBackTimeout bounds one write-back run, so a git server that
	// accepts connections and never answers stalls only its own
	// repository's worker, and only until the timeout; default 2m.
	WriteBackTimeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (o *Options) validate() error {
	var missing []string
	if o.Client == nil {
		missing = append(missing, "Client")
	}
	if o.APIReader == nil {
		missing = append(missing, "APIReader")
	}
	if o.Detector == nil {
		missing = append(missing, "Detector")
	}
	if o.Holder == nil {
		missing = append(missing, "Holder")
	}
	if o.Live == nil {
		missing = append(missing, "Live")
	}
	if o.Sealer == nil {
		missing = append(missing, "Sealer")
	}
	if o.Writer != nil && o.Targets == nil {
		missing = append(missing, "Targets (with Writer)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("governor: missing %v", missing)
	}
	if o.LiveWorkers < 1 {
		o.LiveWorkers = 4
	}
	if o.ResyncWorkers < 1 {
		o.ResyncWorkers = 1
	}
	if o.ResyncQPS <= 0 {
		o.ResyncQPS = 10
	}
	if o.WriteBackTimeout <= 0 {
		o.WriteBackTimeout = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Notify == nil {
		o.Notify = func(types.NamespacedName) {}
	}
	return nil
}

// objKey names a live object.
type objKey struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func (k objKey) String() string {
	if k.Namespace == "" {
		return k.GVK.Kind + "/" + k.Name
	}
	return k.GVK.Kind + "/" + k.Namespace + "/" + k.Name
}

// Governor is the drift engine. Create it with New and run it with Start.
type Governor struct {
	opts   Options
	exec   *executor
	live   workqueue.TypedRateLimitingInterface[objKey]
	resync workqueue.TypedRateLimitingInterface[objKey]
	// syncWait spaces a resync item's looks at a watch not synced yet.
	syncWait workqueue.TypedRateLimiter[objKey]
	// expiry holds one timer per record with a limited hold (expiry.go).
	expiry  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	limiter *rate.Limiter
	wb      *writebacks

	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
	// pending holds what is known of each queued live change.
	pending map[objKey]change
	// inflight holds the live changes a live worker has taken and is
	// evaluating, so a resync that records the drift first still knows
	// when the change reached the watch (sighting).
	inflight map[objKey]change
	// unowned are audited Secret writes no current render declares, kept
	// while a render that may declare them is not current (secrets.go).
	unowned map[objKey]unownedWrite
	// resyncItems are the objects queued for a resync, with their owner.
	resyncItems map[objKey]change
	// attributionTries counts re-evaluations waiting for the audit log.
	attributionTries map[objKey]int
	// deleterTries counts looks at a deletion waiting for the audit log
	// to name who deleted the object (deletion): apart from
	// attributionTries, whose entries also hold write-back back.
	deleterTries map[objKey]int
}

// New returns a Governor; call Start to run its workers.
func New(opts Options) (*Governor, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	gv := &Governor{
		opts:    opts,
		limiter: rate.NewLimiter(rate.Limit(opts.ResyncQPS), 1),
		live: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objKey](),
			workqueue.TypedRateLimitingQueueConfig[objKey]{Name: "reflux-live"}),
		resync: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objKey](),
			workqueue.TypedRateLimitingQueueConfig[objKey]{Name: "reflux-resync"}),
		syncWait:         workqueue.NewTypedItemExponentialFailureRateLimiter[objKey](250*time.Millisecond, syncWaitMax),
		expiry:           newExpiryQueue(),
		entries:          map[types.NamespacedName]*entry{},
		pending:          map[objKey]change{},
		inflight:         map[objKey]change{},
		unowned:          map[objKey]unownedWrite{},
		resyncItems:      map[objKey]change{},
		attributionTries: map[objKey]int{},
		deleterTries:     map[objKey]int{},
	}
	gv.exec = &executor{client: opts.Client, fresh: opts.APIReader, holder: opts.Holder, events: opts.Events,
		metrics: opts.Metrics, log: opts.Log, now: opts.Now, locks: newKeyedMutex(), sealer: opts.Sealer,
		impersonation: opts.Impersonation, marker: opts.Marker}
	gv.exec.closer = gv.withCloser
	gv.wb = newWritebacks(gv)
	return gv, nil
}

// Start runs the workers until ctx ends. It implements manager.Runnable,
// so the engine runs under the manager's leader election.
func (gv *Governor) Start(ctx context.Context) error {
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
	gv.wb.start()
	run(gv.opts.LiveWorkers, gv.processLive)
	run(gv.opts.ResyncWorkers, gv.processResync)
	run(1, gv.processExpiry)
	<-ctx.Done()
	gv.live.ShutDown()
	gv.resync.ShutDown()
	gv.expiry.ShutDown()
	gv.wb.shutdown()
	wg.Wait()
	gv.wb.wait()
	return nil
}

func (gv *Governor) now() time.Time { return gv.opts.Now() }

// IsSealed reports whether reflux wrote d: its seal verifies.
func (gv *Governor) IsSealed(d *refluxv1.Drift) bool {
	return gv.opts.Sealer.Verify(d) == nil
}

// Sealed returns the records whose seal verifies: the only ones the
// engine acts on or reports. The others are dealt with when the engine
// looks at them (see executor.discard).
func (gv *Governor) Sealed(all []refluxv1.Drift) []refluxv1.Drift {
	out := make([]refluxv1.Drift, 0, len(all))
	for i := range all {
		if gv.opts.Sealer.Verify(&all[i]) == nil {
			out = append(out, all[i])
		}
	}
	return out
}
