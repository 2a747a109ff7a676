package expiry

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/execute"
)

// Registry returns a governed Kustomization's state.
type Registry interface {
	Snapshot(id types.NamespacedName) (reverse.Snapshot, bool)
}

// Records applies a decision to a record (execute.Executor).
type Records interface {
	WithRecord(ctx context.Context, p *execute.Plan, fn func(rec *refluxv1.Drift) (decide.Decision, error)) error
}

// LiveStore reads the live watches' cache.
type LiveStore interface {
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
}

// Options wire Timers; all but Log and Now are required.
type Options struct {
	// Client reads the record a timer fired for.
	Client   client.Reader
	Registry Registry
	Records  Records
	Live     LiveStore
	Log      logr.Logger
	Now      func() time.Time
}

// Timers arm and fire one timer per record with a limited hold.
type Timers struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// New returns Timers; call Start to run their worker.
func New(opts Options) (*Timers, error) {
	if opts.Client == nil || opts.Registry == nil || opts.Records == nil || opts.Live == nil {
		return nil, errors.New("expiry: Client, Registry, Records and Live are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Timers{opts: opts, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "reflux-expiry"})}, nil
}

// Schedule arms the expiry timer of every record that has one due: the
// Kustomization reconciler hands it each Kustomization's records when it
// reports them, which covers a new hold, a changed limit and a restart.
// A timer already armed earlier stays; one that fires early re-arms. It
// never blocks.
func (t *Timers) Schedule(records []refluxv1.Drift) {
	now := t.opts.Now()
	for i := range records {
		after, due := decide.ExpiryDue(&records[i], now)
		if !due {
			continue
		}
		t.queue.AddAfter(types.NamespacedName{Namespace: records[i].Namespace, Name: records[i].Name}, after)
	}
}

// Start runs the worker until ctx ends.
func (t *Timers) Start(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for t.process(ctx) {
		}
	}()
	<-ctx.Done()
	t.queue.ShutDown()
	<-done
}

func (t *Timers) process(ctx context.Context) bool {
	k, shutdown := t.queue.Get()
	if shutdown {
		return false
	}
	defer t.queue.Done(k)
	if err := t.expire(ctx, k); err != nil {
		t.opts.Log.Error(err, "acting on an expired hold", "record", k.String())
		t.queue.AddRateLimited(k)
		return true
	}
	t.queue.Forget(k)
	return true
}

// expire decides on one record whose timer fired, and re-arms the timer
// when the record's expiry is still ahead (it moved since the timer was
// armed).
func (t *Timers) expire(ctx context.Context, key types.NamespacedName) error {
	rec, err := execute.ReadRecord(ctx, t.opts.Client, key.Namespace, key.Name)
	if err != nil || rec == nil {
		return err
	}
	owner := types.NamespacedName{Namespace: rec.Spec.Kustomization.Namespace, Name: rec.Spec.Kustomization.Name}
	snap, governed := t.opts.Registry.Snapshot(owner)
	if !governed {
		// Not governed here (any more, or by another shard): the reconciler
		// of the reflux that governs it arms its own timer.
		return nil
	}
	p := execute.Plan{Name: rec.Name, Namespace: rec.Namespace, Object: rec.Spec.Object, Kustomization: snap.Gov.Kustomization,
		As: snap.Gov.Identity}
	if rec.Spec.HelmRelease != nil {
		// A Helm release's object is held with helm-controller's key, as
		// reflux itself (helmlive).
		p.HelmRelease, p.As = rec.Spec.HelmRelease.DeepCopy(), ""
	}
	gvk := schema.FromAPIVersionAndKind(p.Object.APIVersion, p.Object.Kind)
	_, exists := t.opts.Live.Get(gvk, p.Object.Namespace, p.Object.Name)
	var last *refluxv1.Drift
	err = t.opts.Records.WithRecord(ctx, &p, func(cur *refluxv1.Drift) (decide.Decision, error) {
		d := decide.Expiry(decide.ExpiryInput{Record: cur, OnExpiry: snap.Gov.Policy.Spec.ManualHotfix.OnExpiry,
			LiveExists: exists, Now: t.opts.Now()})
		last = cur
		if d.Record != nil {
			last = d.Record
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	if after, due := decide.ExpiryDue(last, t.opts.Now()); due && after > 0 {
		t.queue.AddAfter(key, after)
	}
	return nil
}
