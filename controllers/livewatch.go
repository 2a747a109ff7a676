package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// LiveHandler receives the live watches' events, on the informers'
// goroutines: it must not block.
type LiveHandler interface {
	// OnLiveAdd is called for each object a watch lists as it starts,
	// and for each object created after.
	OnLiveAdd(gvk schema.GroupVersionKind, cur *unstructured.Unstructured, seen time.Time)
	OnLiveUpdate(gvk schema.GroupVersionKind, old, cur *unstructured.Unstructured, seen time.Time)
	OnLiveDelete(gvk schema.GroupVersionKind, last *unstructured.Unstructured)
}

// WatcherOptions restrict the live watches.
type WatcherOptions struct {
	// Namespace, when set, is the only namespace watched, as
	// --watch-all-namespaces=false restricts Flux's controllers. Objects of
	// cluster-scoped kinds are then not watched at all.
	Namespace string
	// Namespaces, when set, are the namespaces watched (--watch-namespaces,
	// the namespaced profile), with Namespace if that is set too; as with
	// Namespace, cluster-scoped kinds are then not watched.
	Namespaces []string
	// IgnoreSecrets never watches Secrets (--secrets=ignore): without RBAC
	// to read them, a Secret watch would only fail, over and over.
	IgnoreSecrets bool
	// Selector is the label selector of the objects watched: Flux's
	// kustomize-controller label by default, helmlive.NameLabel for the
	// objects helm-controller renders.
	Selector string
	// OwnerOf, when set, names the Kustomization an object belongs to
	// (intake.OwnerOf): a Kustomization that starts using a kind whose
	// watch has already listed is handed the objects it owns (Ensure).
	OwnerOf func(metav1.Object) types.NamespacedName
	Log     logr.Logger
}

// namespaces returns the namespaces the watches are restricted to, or nil
// for the whole cluster.
func (o WatcherOptions) namespaces() []string {
	var out []string
	seen := map[string]bool{}
	for _, ns := range append([]string{o.Namespace}, o.Namespaces...) {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}

// Watcher runs one shared, label-selected informer per GVK in use across
// governed Kustomizations, and stops it when no Kustomization uses it. Its
// stores are also the live state resyncs read, so a resync costs no GETs.
type Watcher struct {
	dyn     dynamic.Interface
	mapper  meta.RESTMapper
	handler LiveHandler
	opts    WatcherOptions

	mu        sync.Mutex
	informers map[schema.GroupVersionKind]*gvkInformer
	users     map[types.NamespacedName]map[schema.GroupVersionKind]bool
	skipped   map[schema.GroupVersionKind]bool
	onAccess  func(types.NamespacedName)
}

// gvkInformer watches one GVK: one informer for the whole cluster, keyed
// "", or one per restricted namespace.
type gvkInformer struct {
	// resource is the kind's API resource, as the audit log names it.
	resource    schema.GroupResource
	byNamespace map[string]toolscache.SharedIndexInformer
	// access is whether each informer's watch is allowed, by the same key.
	access map[string]*access
	stop   chan struct{}
}

func (g *gvkInformer) run() {
	for _, inf := range g.byNamespace {
		go inf.Run(g.stop)
	}
}

// store returns the store holding objects of namespace.
func (g *gvkInformer) store(namespace string) (toolscache.Store, bool) {
	if inf, ok := g.byNamespace[""]; ok {
		return inf.GetStore(), true
	}
	inf, ok := g.byNamespace[namespace]
	if !ok {
		return nil, false
	}
	return inf.GetStore(), true
}

func (g *gvkInformer) hasSynced() bool {
	for _, inf := range g.byNamespace {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

var _ governor.LiveStore = &Watcher{}

// NewWatcher returns a Watcher; give it its handler with Handle before
// the first Ensure.
func NewWatcher(dyn dynamic.Interface, mapper meta.RESTMapper, opts WatcherOptions) *Watcher {
	return &Watcher{
		dyn: dyn, mapper: mapper, opts: opts,
		informers: map[schema.GroupVersionKind]*gvkInformer{},
		users:     map[types.NamespacedName]map[schema.GroupVersionKind]bool{},
		skipped:   map[schema.GroupVersionKind]bool{},
	}
}

// Handle sets the handler of live events. The engine that handles them
// also reads the watches' stores, so it is built after the Watcher and
// handed to it here, as an informer takes its event handlers.
func (w *Watcher) Handle(h LiveHandler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handler = h
}

// Ensure makes the watched GVKs for the Kustomization ks exactly gvks:
// informers start for new kinds and stop for kinds no Kustomization uses
// any more. It does not wait for a new informer to list its objects: the
// live path must not wait, and the resync waits for Synced itself.
//
// A kind already watched for another Kustomization listed its objects
// before ks was governed, and its handler took none of ks's then: with
// OwnerOf set, Ensure hands the handler each object of ks such a watch
// holds, as listed, when ks is first watched. A takeover publishes
// Kustomizations one reconcile at a time while the first one's watches
// list, and the objects of the later ones, held or edited while no
// replica led, would otherwise wait for the resync.
func (w *Watcher) Ensure(ks types.NamespacedName, gvks []schema.GroupVersionKind) error {
	w.mu.Lock()
	if w.handler == nil {
		w.mu.Unlock()
		return fmt.Errorf("watching live objects of %s: the watcher has no handler", ks)
	}
	_, known := w.users[ks]
	want := make(map[schema.GroupVersionKind]bool, len(gvks))
	var replay []listedObject
	var errs []error
	for _, gvk := range gvks {
		if w.skipped[gvk] {
			continue
		}
		want[gvk] = true
		if inf, ok := w.informers[gvk]; ok {
			if !known && w.opts.OwnerOf != nil {
				replay = append(replay, inf.owned(gvk, ks, w.opts.OwnerOf)...)
			}
			continue
		}
		inf, err := w.newInformer(gvk)
		if err != nil {
			errs = append(errs, err)
			delete(want, gvk)
			continue
		}
		if inf == nil {
			delete(want, gvk)
			continue
		}
		w.informers[gvk] = inf
		inf.run()
	}
	w.users[ks] = want
	w.gcLocked()
	h := w.handler
	w.mu.Unlock()
	now := time.Now()
	for _, o := range replay {
		h.OnLiveAdd(o.gvk, o.obj, now)
	}
	if len(errs) > 0 {
		return fmt.Errorf("watching live objects of %s: %v", ks, errs)
	}
	return nil
}

// listedObject is an object a watch holds, of kind gvk.
type listedObject struct {
	gvk schema.GroupVersionKind
	obj *unstructured.Unstructured
}

// owned returns the objects of the kind's stores that ownerOf says ks
// owns.
func (g *gvkInformer) owned(gvk schema.GroupVersionKind, ks types.NamespacedName,
	ownerOf func(metav1.Object) types.NamespacedName) []listedObject {
	var out []listedObject
	for _, inf := range g.byNamespace {
		for _, item := range inf.GetStore().List() {
			if u, ok := item.(*unstructured.Unstructured); ok && ownerOf(u) == ks {
				out = append(out, listedObject{gvk: gvk, obj: u})
			}
		}
	}
	return out
}

// Forget drops a Kustomization's watches.
func (w *Watcher) Forget(ks types.NamespacedName) {
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
	store, ok := inf.store(namespace)
	if !ok {
		return nil, false
	}
	item, exists, err := store.GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	u, ok := item.(*unstructured.Unstructured)
	return u, ok
}

// Synced reports whether the watch of gvk has listed every object. A kind
// that is not watched reports true: nothing is coming for it.
func (w *Watcher) Synced(gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	inf, ok := w.informers[gvk]
	w.mu.Unlock()
	return !ok || inf.hasSynced()
}

// ListedFor reports whether the Kustomization ks is watched and each of
// its watches has listed every object. Unlike Synced, a Kustomization
// not watched yet has listed nothing; a kind it uses that is never
// watched (Secrets under --secrets=ignore, a cluster-scoped kind under a
// namespace restriction) or whose watch RBAC refuses waits for nothing.
func (w *Watcher) ListedFor(ks types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds, ok := w.users[ks]
	if !ok {
		return false
	}
	for gvk := range kinds {
		if inf, ok := w.informers[gvk]; ok && !inf.listedOrRefused() {
			return false
		}
	}
	return true
}

// listedOrRefused reports whether each of the kind's informers has listed
// its objects, or had its watch refused: nothing more comes from those
// until RBAC changes.
func (g *gvkInformer) listedOrRefused() bool {
	for key, inf := range g.byNamespace {
		if a := g.access[key]; !inf.HasSynced() && (a == nil || a.refused() == nil) {
			return false
		}
	}
	return true
}

// Complete reports whether objects of gvk in namespace are watched, the
// watch allowed and listed: only then is one missing from the store known
// not to exist. A kind reflux does not watch (Secrets under
// --secrets=metadata), a namespace outside --watch-namespace, or a watch
// refused or still listing cannot tell.
func (w *Watcher) Complete(gvk schema.GroupVersionKind, namespace string) bool {
	w.mu.Lock()
	g, ok := w.informers[gvk]
	w.mu.Unlock()
	if !ok {
		return false
	}
	key := namespace
	if _, all := g.byNamespace[""]; all {
		key = ""
	}
	inf, ok := g.byNamespace[key]
	if !ok || !inf.HasSynced() {
		return false
	}
	a := g.access[key]
	return a == nil || a.refused() == nil
}

// Watches reports whether a kind of the API resource gr is watched: the
// audit webhook keeps only writes to such objects, so the rest of the
// cluster's writes cost nothing that grows.
func (w *Watcher) Watches(gr schema.GroupResource) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, inf := range w.informers {
		if inf.resource == gr {
			return true
		}
	}
	return false
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
	w.users = map[types.NamespacedName]map[schema.GroupVersionKind]bool{}
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

// newInformer starts nothing: it builds the informer of one GVK, or nil
// for a cluster-scoped kind under a namespace restriction.
func (w *Watcher) newInformer(gvk schema.GroupVersionKind) (*gvkInformer, error) {
	mapping, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if w.opts.IgnoreSecrets && gvk.Group == "" && gvk.Kind == "Secret" {
		w.skipped[gvk] = true
		w.opts.Log.Info("not watching Secrets (--secrets is not read): their drift comes from the audit log under --secrets=metadata, and not at all under ignore", "kind", gvk.String())
		return nil, nil
	}
	resources := map[string]dynamic.ResourceInterface{"": w.dyn.Resource(mapping.Resource)}
	if nss := w.opts.namespaces(); len(nss) > 0 {
		if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			w.skipped[gvk] = true
			w.opts.Log.Info("not watching a cluster-scoped kind: reflux is restricted to namespaces",
				"kind", gvk.String(), "namespaces", nss)
			return nil, nil
		}
		resources = map[string]dynamic.ResourceInterface{}
		for _, ns := range nss {
			resources[ns] = w.dyn.Resource(mapping.Resource).Namespace(ns)
		}
	}
	out := &gvkInformer{resource: mapping.Resource.GroupResource(), byNamespace: map[string]toolscache.SharedIndexInformer{},
		access: map[string]*access{}, stop: make(chan struct{})}
	for ns, res := range resources {
		a := &access{changed: w.accessChanged, log: w.logAccess}
		inf, err := w.informerFor(gvk, mapping.Resource.GroupResource(), ns, res, a)
		if err != nil {
			return nil, err
		}
		out.byNamespace[ns], out.access[ns] = inf, a
	}
	return out, nil
}

// informerFor builds the informer of one GVK over res, the resource gr in
// namespace ns ("" for the cluster), reporting to a whether the apiserver
// lets it watch.
func (w *Watcher) informerFor(gvk schema.GroupVersionKind, gr schema.GroupResource, ns string,
	res dynamic.ResourceInterface, a *access) (toolscache.SharedIndexInformer, error) {
	// Flux labels every object it applies: caching only those keeps the
	// rest of the cluster out of reflux's memory.
	selector := governor.FluxNameLabel
	if w.opts.Selector != "" {
		selector = w.opts.Selector
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			list, err := res.List(ctx, o)
			return list, forbiddenAs(err, "list", gvk, gr, ns)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			wi, err := res.Watch(ctx, o)
			if err != nil {
				return nil, forbiddenAs(err, "watch", gvk, gr, ns)
			}
			// A watch, even one that streams the initial list, is
			// what the informer lacked.
			a.allowed()
			return wi, nil
		},
	}
	informer := toolscache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
	// A refused list or watch is retried with backoff for as long as the
	// informer runs; the handler reports it once, on the Kustomizations
	// using the kind, instead of client-go logging every retry.
	if err := informer.SetWatchErrorHandlerWithContext(a.onWatchError); err != nil {
		return nil, fmt.Errorf("watching %s: %w", gvk, err)
	}
	h := w.handler
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				h.OnLiveAdd(gvk, u, time.Now())
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			seen := time.Now()
			u, ok := newObj.(*unstructured.Unstructured)
			old, _ := oldObj.(*unstructured.Unstructured)
			if !ok || (old != nil && !decide.Meaningful(old, u)) {
				return
			}
			h.OnLiveUpdate(gvk, old, u, seen)
		},
		DeleteFunc: func(obj interface{}) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				h.OnLiveDelete(gvk, u)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding handler for %s: %w", gvk, err)
	}
	return informer, nil
}
