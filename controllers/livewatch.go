package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"
)

// fluxNameLabel marks every object kustomize-controller applies. Live
// watches select on it, so reflux caches Flux-managed objects only.
const (
	fluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	fluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// LiveChange is called for every update of a watched live object, from the
// informer's goroutine: it must not block.
type LiveChange func(gvk schema.GroupVersionKind, obj *unstructured.Unstructured, seen time.Time)

// Watcher runs one shared, label-selected informer per GVK in use across
// governed Kustomizations, and stops it when no Kustomization uses it. Its
// stores are also the live state for full resyncs, so a resync costs no
// GETs.
type Watcher struct {
	dyn      dynamic.Interface
	mapper   meta.RESTMapper
	onChange LiveChange
	syncWait time.Duration

	mu        sync.Mutex
	informers map[schema.GroupVersionKind]*gvkInformer
	users     map[string]map[schema.GroupVersionKind]bool
}

type gvkInformer struct {
	informer toolscache.SharedIndexInformer
	stop     chan struct{}
}

// NewWatcher returns a Watcher calling onChange for live updates.
func NewWatcher(dyn dynamic.Interface, mapper meta.RESTMapper, onChange LiveChange) *Watcher {
	return &Watcher{
		dyn: dyn, mapper: mapper, onChange: onChange, syncWait: 30 * time.Second,
		informers: map[schema.GroupVersionKind]*gvkInformer{},
		users:     map[string]map[schema.GroupVersionKind]bool{},
	}
}

// Ensure makes the watched GVKs for the Kustomization ks exactly gvks:
// informers start for new kinds (and are waited on until synced) and stop
// for kinds no Kustomization uses any more.
func (w *Watcher) Ensure(ctx context.Context, ks string, gvks []schema.GroupVersionKind) error {
	w.mu.Lock()
	want := make(map[schema.GroupVersionKind]bool, len(gvks))
	var started []*gvkInformer
	var errs []error
	for _, gvk := range gvks {
		want[gvk] = true
		if _, ok := w.informers[gvk]; ok {
			continue
		}
		inf, err := w.newInformer(gvk)
		if err != nil {
			errs = append(errs, err)
			delete(want, gvk)
			continue
		}
		w.informers[gvk] = inf
		started = append(started, inf)
	}
	w.users[ks] = want
	w.gcLocked()
	w.mu.Unlock()

	for _, inf := range started {
		go inf.informer.Run(inf.stop)
	}
	syncCtx, cancel := context.WithTimeout(ctx, w.syncWait)
	defer cancel()
	for _, inf := range started {
		if !toolscache.WaitForCacheSync(syncCtx.Done(), inf.informer.HasSynced) {
			errs = append(errs, fmt.Errorf("live watch did not sync within %s", w.syncWait))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("watching live objects of %s: %v", ks, errs)
	}
	return nil
}

// Forget drops a Kustomization's watches.
func (w *Watcher) Forget(ks string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.users, ks)
	w.gcLocked()
}

// Get returns the cached live object.
func (w *Watcher) Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool) {
	w.mu.Lock()
	inf, ok := w.informers[gvk]
	w.mu.Unlock()
	if !ok {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, exists, err := inf.informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	u, ok := item.(*unstructured.Unstructured)
	return u, ok
}

// Watching returns the number of running informers.
func (w *Watcher) Watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.informers)
}

// Stop stops every informer.
func (w *Watcher) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users = map[string]map[schema.GroupVersionKind]bool{}
	w.gcLocked()
}

func (w *Watcher) gcLocked() {
	for gvk, inf := range w.informers {
		used := false
		for _, kinds := range w.users {
			if kinds[gvk] {
				used = true
				break
			}
		}
		if !used {
			close(inf.stop)
			delete(w.informers, gvk)
		}
	}
}

func (w *Watcher) newInformer(gvk schema.GroupVersionKind) (*gvkInformer, error) {
	mapping, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	res := w.dyn.Resource(mapping.Resource)
	selector := metav1.ListOptions{LabelSelector: fluxNameLabel}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector.LabelSelector
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector.LabelSelector
			return res.Watch(ctx, o)
		},
	}
	informer := toolscache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			seen := time.Now()
			u, ok := newObj.(*unstructured.Unstructured)
			old, _ := oldObj.(*unstructured.Unstructured)
			if !ok || (old != nil && !meaningfulChange(old, u)) {
				return
			}
			w.onChange(gvk, u, seen)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding handler for %s: %w", gvk, err)
	}
	return &gvkInformer{informer: informer, stop: make(chan struct{})}, nil
}

// holdAnnotations are what reflux itself writes to a live object.
var holdAnnotations = []string{ReconcileAnnotation, HeldByAnnotation, HeldSinceAnnotation}

// meaningfulChange reports whether an update changed more than the
// bookkeeping and reflux's own hold: the hold must not make reflux look at
// the object again, which would cost a dry run per change.
func meaningfulChange(old, cur *unstructured.Unstructured) bool {
	if old.GetResourceVersion() == cur.GetResourceVersion() {
		return false
	}
	return !equality.Semantic.DeepEqual(comparable(old), comparable(cur))
}

func comparable(u *unstructured.Unstructured) map[string]interface{} {
	c := u.DeepCopy()
	c.SetResourceVersion("")
	c.SetManagedFields(nil)
	c.SetGeneration(0)
	if a := c.GetAnnotations(); a != nil {
		for _, k := range holdAnnotations {
			delete(a, k)
		}
		if len(a) == 0 {
			a = nil // absent and empty are the same annotations
		}
		c.SetAnnotations(a)
	}
	return c.Object
}
