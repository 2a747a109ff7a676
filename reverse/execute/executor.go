package execute

import (
	"context"
	"errors"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Holder holds live objects against Flux's revert and releases them.
type Holder interface {
	// Hold writes annotations (refluxv1.HoldAnnotations) on obj, and
	// returns obj as the apiserver left it.
	Hold(ctx context.Context, obj refluxv1.ObjectRef, annotations map[string]string) (*unstructured.Unstructured, error)
	Release(ctx context.Context, obj refluxv1.ObjectRef) error
}

// Impersonation gives the Holder that acts as a user: a Kustomization's
// ServiceAccount, as kustomize-controller impersonates it.
type Impersonation interface {
	Holder(user string) (Holder, error)
}

// Marker adds the manual-hotfix annotation to a live object whose hotfix
// the audit log declared, under reflux's field manager.
type Marker interface {
	Mark(ctx context.Context, obj refluxv1.ObjectRef, annotations map[string]string) error
	// Unmark removes the annotations again, when the record closes.
	Unmark(ctx context.Context, obj refluxv1.ObjectRef, keys []string) error
}

// EventRecorder is what reflux needs of Flux's events recorder
// (github.com/fluxcd/pkg/runtime/events), which writes Kubernetes events
// and forwards them to notification-controller when --events-addr is set.
type EventRecorder interface {
	AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{})
}

// Metrics is what the Executor counts (reverse/metrics.Metrics).
type Metrics interface {
	ObserveDetection(ks *kustomizev1.Kustomization, seen, now time.Time)
	ObserveHotfix(namespace string, ks *kustomizev1.Kustomization)
}

// Closer fills in who closed a record and at which revision, before the
// close is written (reverse/evaluate.Closer).
type Closer func(rec *refluxv1.Drift, c *refluxv1.DriftClosure, revision string) *refluxv1.DriftClosure

// Options wire an Executor. Client, APIReader, Holder and Sealer are
// required.
type Options struct {
	// Client reads records from the cache and writes them.
	Client client.Client
	// APIReader reads records straight from the apiserver, after a write
	// lost a race with a cache that was behind.
	APIReader client.Reader
	Holder    Holder
	// Sealer seals every record written, and proves the ones read.
	Sealer *record.Sealer
	// Impersonation acts as a Plan's identity; nil acts as reflux.
	Impersonation Impersonation
	// Marker annotates audit-derived hotfixes; nil leaves them unmarked.
	Marker Marker
	// Events records events on Kustomizations; nil records none.
	Events EventRecorder
	// Metrics counts detections and hotfixes; nil counts none.
	Metrics Metrics
	// Closer names who closed a record; nil writes closes as decided.
	Closer Closer
	Log    logr.Logger
	Now    func() time.Time
}

// Executor applies decisions. It is the only writer of Drift records.
type Executor struct {
	opts  Options
	locks *keyedMutex
}

// New returns an Executor.
func New(opts Options) (*Executor, error) {
	if opts.Client == nil || opts.APIReader == nil || opts.Holder == nil || opts.Sealer == nil {
		return nil, errors.New("execute: Client, APIReader, Holder and Sealer are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Executor{opts: opts, locks: newKeyedMutex()}, nil
}

// Plan names the record and object a decision is about.
type Plan struct {
	// Name and Namespace name the record.
	Name, Namespace string
	// Object is the live object the record is about.
	Object refluxv1.ObjectRef
	// Kustomization is the governing Kustomization, for events and
	// reconcile requests; nil when it is not governed.
	Kustomization *kustomizev1.Kustomization
	// HelmRelease is set when a Helm release rendered the object: its
	// holds take helm-controller's key instead of kustomize-controller's.
	HelmRelease *refluxv1.HelmReleaseRef
	// Seen is when the change reached the watch, for detection latency.
	Seen time.Time
	// As is the identity the hold and release go out as: the governing
	// Kustomization's (Governed.Identity); "" is reflux's own, also for a
	// Kustomization no longer governed, whose holds reflux still lets go.
	As string
}

// holdAnnotations are what a hold of the plan's object writes.
func (p *Plan) holdAnnotations(since time.Time) map[string]string {
	return refluxv1.HoldAnnotations(p.Name, since, p.HelmRelease != nil)
}

func (p *Plan) object() string {
	return p.Object.Kind + "/" + p.Object.Namespace + "/" + p.Object.Name
}

// maxAttempts bounds how often a decision is re-made after a write lost a
// race: the cache was behind, or a user changed the record meanwhile.
const maxAttempts = 3

// WithRecord reads the plan's record, decides with fn and applies the
// decision, under the record's lock. A record whose seal does not verify
// is deleted first and fn sees none. A write that loses a race is
// decided again from a fresh read.
func (x *Executor) WithRecord(ctx context.Context, p *Plan, fn func(rec *refluxv1.Drift) (decide.Decision, error)) error {
	unlock := x.locks.lock(p.Namespace + "/" + p.Name)
	defer unlock()
	var reader client.Reader = x.opts.Client
	for attempt := 1; ; attempt++ {
		rec, err := ReadRecord(ctx, reader, p.Namespace, p.Name)
		if err != nil {
			return err
		}
		if rec != nil {
			if why := x.opts.Sealer.Verify(rec); why != nil {
				if err := x.discard(ctx, p, rec, why); err != nil {
					return err
				}
				rec = nil
			}
		}
		d, err := fn(rec)
		if err != nil {
			return err
		}
		// Every decision, also one that writes nothing, so that a change
		// that left no record can be followed at debug level.
		x.opts.Log.V(1).Info("decided", "record", p.Name, "object", p.object(), "action", string(d.Action),
			"hold", d.Hold, "why", d.Why, "attempt", attempt)
		err = x.apply(ctx, p, d)
		if !raced(err) || attempt == maxAttempts {
			return err
		}
		reader = x.opts.APIReader
	}
}

func raced(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// ReadRecord reads a record; nil when there is none.
func ReadRecord(ctx context.Context, r client.Reader, namespace, name string) (*refluxv1.Drift, error) {
	rec := &refluxv1.Drift{}
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, rec)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading drift record %s/%s: %w", namespace, name, err)
	}
	return rec, nil
}

// apply carries out one decision: the record and the hold, then the
// manual-hotfix annotation an audit-derived hotfix asks for.
func (x *Executor) apply(ctx context.Context, p *Plan, d decide.Decision) error {
	if err := x.applyRecord(ctx, p, d); err != nil {
		return err
	}
	return x.mark(ctx, p, d)
}

func (x *Executor) applyRecord(ctx context.Context, p *Plan, d decide.Decision) error {
	switch d.Action {
	case decide.Create, decide.Update, decide.Reopen:
		return x.write(ctx, p, d)
	case decide.SetStatus:
		return x.writeStatus(ctx, d.Record.DeepCopy(), d.Record.Status)
	case decide.Resolve, decide.Dismiss:
		return x.close(ctx, p, d)
	case decide.Expire:
		return x.expire(ctx, p, d)
	case decide.Finalize:
		if err := x.hold(ctx, p, d); err != nil {
			return err
		}
		return x.finalize(ctx, d.Record)
	default:
		if err := x.hold(ctx, p, d); err != nil {
			return err
		}
		if d.Hold == decide.Release && d.RequestReconcile {
			// A release finished late (finishRelease): Flux restores
			// Git now rather than at its next interval.
			return x.requestReconcile(ctx, p)
		}
		return nil
	}
}
