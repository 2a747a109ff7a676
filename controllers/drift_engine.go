package controllers

import (
	"context"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// Governed is what the live path needs to evaluate the objects of one
// governed Kustomization. The Kustomization reconciler publishes it; live
// events only read it.
type Governed struct {
	Kustomization *kustomizev1.Kustomization
	Policy        *refluxv1.ReverseSyncPolicy
	Classifier    *classify.Classifier
	Render        *desired.Render
}

// liveKey names a live object queued for evaluation.
type liveKey struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// Engine evaluates live objects of governed Kustomizations as their
// changes arrive: detect, classify, hold, record. Each change re-evaluates
// that one object only.
type Engine struct {
	Client   client.Client
	Detector *drift.Detector
	Holder   Holder
	Watcher  *Watcher
	Audit    *audit.Store
	Metrics  *DriftMetrics
	Events   EventRecorder
	Log      logr.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu       sync.RWMutex
	governed map[string]*Governed
	seen     map[liveKey]time.Time
	// attributionTries counts re-evaluations waiting for the audit log.
	attributionTries map[liveKey]int
	queue            workqueue.TypedRateLimitingInterface[liveKey]
}

// NewEngine completes e's internal state and returns it; call Start to run
// its workers.
func NewEngine(e *Engine) *Engine {
	e.governed = map[string]*Governed{}
	e.seen = map[liveKey]time.Time{}
	e.attributionTries = map[liveKey]int{}
	e.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[liveKey](),
		workqueue.TypedRateLimitingQueueConfig[liveKey]{Name: "reflux-live"})
	return e
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Govern publishes (or replaces) the state of a governed Kustomization.
func (e *Engine) Govern(g *Governed) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.governed[g.Kustomization.Namespace+"/"+g.Kustomization.Name] = g
}

// Release stops evaluating a Kustomization's objects.
func (e *Engine) Release(namespace, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.governed, namespace+"/"+name)
}

func (e *Engine) lookup(namespace, name string) *Governed {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.governed[namespace+"/"+name]
}

// OnLiveChange is the Watcher's callback: it queues the object if a
// governed Kustomization owns it. It never blocks the informer.
func (e *Engine) OnLiveChange(gvk schema.GroupVersionKind, obj *unstructured.Unstructured, seen time.Time) {
	labels := obj.GetLabels()
	if e.lookup(labels[fluxNamespaceLabel], labels[fluxNameLabel]) == nil {
		return
	}
	key := liveKey{GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	e.mu.Lock()
	if _, ok := e.seen[key]; !ok {
		e.seen[key] = seen
	}
	e.mu.Unlock()
	e.queue.Add(key)
}

// Start runs workers until ctx ends. It implements manager.Runnable.
func (e *Engine) Start(ctx context.Context, workers int) {
	for i := 0; i < workers; i++ {
		go func() {
			for e.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	e.queue.ShutDown()
}

func (e *Engine) processNext(ctx context.Context) bool {
	key, shutdown := e.queue.Get()
	if shutdown {
		return false
	}
	defer e.queue.Done(key)
	e.mu.Lock()
	seen := e.seen[key]
	delete(e.seen, key)
	e.mu.Unlock()

	live, ok := e.Watcher.Get(key.GVK, key.Namespace, key.Name)
	if !ok {
		e.queue.Forget(key)
		return true
	}
	labels := live.GetLabels()
	g := e.lookup(labels[fluxNamespaceLabel], labels[fluxNameLabel])
	if g == nil {
		e.queue.Forget(key)
		return true
	}
	if err := e.Evaluate(ctx, g, live, seen); err != nil {
		e.Log.Error(err, "evaluating live change", "object", key.GVK.Kind+"/"+key.Namespace+"/"+key.Name)
		e.queue.AddRateLimited(key)
		return true
	}
	e.queue.Forget(key)
	return true
}
