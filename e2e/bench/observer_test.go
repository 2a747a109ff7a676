package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// target names one live object of the fleet.
type target struct {
	Kind, Namespace, Name string
}

func (t target) String() string { return t.Kind + "/" + t.Namespace + "/" + t.Name }

// change is one live edit the observer waits on: it is complete when the
// object carries reflux's hold and its Drift record, status included, says
// Held with the edited value. The times are when the benchmark's watches
// delivered each, so they include the watch delivery a user would see.
type change struct {
	target   target
	value    string
	heldAt   time.Time
	recordAt time.Time
	done     chan struct{}
}

// observer is the benchmark's own view of the cluster: watches on the
// fleet's ConfigMaps and Deployments and on Drift records, on a connection
// of its own whose requests are not counted as reflux's.
type observer struct {
	cache ctrlcache.Cache

	mu      sync.Mutex
	pending *change
}

// startObserver starts the watches and waits until they have synced.
func startObserver(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (*observer, error) {
	flux, err := labels.Parse("kustomize.toolkit.fluxcd.io/name")
	if err != nil {
		return nil, err
	}
	c, err := ctrlcache.New(cfg, ctrlcache.Options{Scheme: scheme, ByObject: map[client.Object]ctrlcache.ByObject{
		&corev1.ConfigMap{}: {Label: flux}, &appsv1.Deployment{}: {Label: flux},
	}})
	if err != nil {
		return nil, err
	}
	o := &observer{cache: c}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &refluxv1.Drift{}} {
		inf, err := c.GetInformer(ctx, obj, ctrlcache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.observe(obj) },
			UpdateFunc: func(_, obj any) { o.observe(obj) },
		}); err != nil {
			return nil, err
		}
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			fmt.Println("benchmark watches stopped:", err)
		}
	}()
	syncCtx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, errors.New("the benchmark's watches did not sync")
	}
	return o, nil
}

// expect registers the change about to be made.
func (o *observer) expect(t target, value string) *change {
	c := &change{target: t, value: value, done: make(chan struct{})}
	o.mu.Lock()
	o.pending = c
	o.mu.Unlock()
	return c
}

// progress says what of c has been seen, for a timeout's message.
func (o *observer) progress(c *change) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprintf("held at %v, record at %v", c.heldAt, c.recordAt)
}

// observe is every watch's event handler.
func (o *observer) observe(obj any) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.pending
	if c == nil {
		return
	}
	switch obj := obj.(type) {
	case *refluxv1.Drift:
		if c.recordAt.IsZero() && recordShows(obj, c) {
			c.recordAt = now
		}
	case client.Object:
		t := target{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if c.heldAt.IsZero() && t == c.target && obj.GetAnnotations()[refluxv1.ReconcileAnnotation] == refluxv1.ReconcileDisabled {
			c.heldAt = now
		}
	}
	if !c.heldAt.IsZero() && !c.recordAt.IsZero() {
		close(c.done)
		o.pending = nil
	}
}

// recordShows reports whether d is the held record of c's edit.
func recordShows(d *refluxv1.Drift, c *change) bool {
	obj := d.Spec.Object
	if obj.Kind != c.target.Kind || obj.Namespace != c.target.Namespace || obj.Name != c.target.Name ||
		d.Status.State != refluxv1.DriftHeld {
		return false
	}
	want := strconv.Quote(c.value) // LiveValue is JSON
	for _, f := range d.Spec.Fields {
		if f.LiveValue == want {
			return true
		}
	}
	return false
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *appsv1.Deployment:
		return "Deployment"
	}
	return ""
}

// unheld lists the fleet's live objects that reflux does not hold yet.
func (o *observer) unheld(ctx context.Context) ([]target, error) {
	var out []target
	cms := &corev1.ConfigMapList{}
	if err := o.cache.List(ctx, cms); err != nil {
		return nil, err
	}
	deps := &appsv1.DeploymentList{}
	if err := o.cache.List(ctx, deps); err != nil {
		return nil, err
	}
	var objs []client.Object
	for i := range cms.Items {
		objs = append(objs, &cms.Items[i])
	}
	for i := range deps.Items {
		objs = append(objs, &deps.Items[i])
	}
	for _, obj := range objs {
		if obj.GetAnnotations()[refluxv1.ReconcileAnnotation] != refluxv1.ReconcileDisabled {
			out = append(out, target{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()})
		}
	}
	return out, nil
}
