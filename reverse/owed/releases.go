package owed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/execute"
)

// Release is a hold owed its release.
type Release struct {
	// As is the identity that took the hold; "" is reflux's own.
	As string
	// Object is the held object.
	Object refluxv1.ObjectRef
	// Record names the record the hold names: once it exists, it owns
	// the hold and nothing is owed here.
	Record types.NamespacedName
}

// Holders gives the Holder whose releases go out as an identity
// (execute.Executor).
type Holders interface {
	HolderFor(user string) (execute.Holder, error)
}

var _ Holders = &execute.Executor{}

// Options wire Releases; all but Log are required.
type Options struct {
	// Records reads the record a hold names.
	Records client.Reader
	Holders Holders
	Log     logr.Logger
}

// Releases retries owed releases, one worker, with per-hold backoff.
type Releases struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[Release]
	// owing are the releases added and not yet done, whether queued, in
	// flight or waiting out their backoff (which the queue's Len omits).
	mu    sync.Mutex
	owing map[Release]bool
}

// New returns Releases; call Start to run its worker.
func New(opts Options) (*Releases, error) {
	if opts.Records == nil || opts.Holders == nil {
		return nil, errors.New("owed: Records and Holders are required")
	}
	return &Releases{opts: opts, owing: map[Release]bool{}, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[Release](),
		workqueue.TypedRateLimitingQueueConfig[Release]{Name: "reflux-owed-releases"})}, nil
}

// Add owes r its release. It never blocks; the same hold added twice is
// released once.
func (o *Releases) Add(r Release) {
	o.mu.Lock()
	o.owing[r] = true
	o.mu.Unlock()
	o.queue.Add(r)
}

// Owing is how many releases are owed and not yet done: an engine that
// stops before it reaches zero leaves holds in place.
func (o *Releases) Owing() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.owing)
}

// Owed lists the releases owed and not yet done, for a successor to
// take over (Add) before this one stops: a reconnected cluster's new
// engine, which releases them as the identities that took the holds.
func (o *Releases) Owed() []Release {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Release, 0, len(o.owing))
	for r := range o.owing {
		out = append(out, r)
	}
	return out
}

// Len is how many releases are owed and not being tried right now.
func (o *Releases) Len() int { return o.queue.Len() }

// Start runs the worker until ctx ends.
func (o *Releases) Start(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for o.process(ctx) {
		}
	}()
	<-ctx.Done()
	o.queue.ShutDown()
	<-done
}

func (o *Releases) process(ctx context.Context) bool {
	r, shutdown := o.queue.Get()
	if shutdown {
		return false
	}
	defer o.queue.Done(r)
	if err := o.release(ctx, r); err != nil {
		o.opts.Log.Error(err, "a hold no record owns is left in place for now and retried; release it by hand if it stays",
			"object", describe(r.Object), "release", Command(r.Object))
		o.queue.AddRateLimited(r)
		return true
	}
	o.queue.Forget(r)
	o.mu.Lock()
	delete(o.owing, r)
	o.mu.Unlock()
	return true
}

// release releases r's hold unless a record owns it now.
func (o *Releases) release(ctx context.Context, r Release) error {
	err := o.opts.Records.Get(ctx, r.Record, &refluxv1.Drift{})
	switch {
	case err == nil:
		return nil // a record owns the hold now
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("no telling whether record %s owns the hold: %w", r.Record, err)
	}
	h, err := o.opts.Holders.HolderFor(r.As)
	if err != nil {
		return err
	}
	if err := h.Release(ctx, r.Object); err != nil {
		return err
	}
	o.opts.Log.Info("released a hold taken before evaluation", "object", describe(r.Object), "as", r.As)
	return nil
}

// Command is the kubectl command that lifts a hold by hand.
func Command(obj refluxv1.ObjectRef) string {
	kind := obj.Kind
	if gv := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind); gv.Group != "" {
		kind += "." + gv.Group
	}
	return fmt.Sprintf("kubectl -n %s annotate %s/%s %s- %s- %s-", obj.Namespace, strings.ToLower(kind), obj.Name,
		refluxv1.ReconcileAnnotation, refluxv1.HeldByAnnotation, refluxv1.HeldSinceAnnotation)
}

func describe(obj refluxv1.ObjectRef) string {
	return obj.Kind + "/" + obj.Namespace + "/" + obj.Name
}
