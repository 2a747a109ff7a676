package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// observer is a benchmark's own view of the cluster, on an admin
// connection whose requests are not reflux's: a watch on the
// Kustomizations from before they are created, and, once Flux has applied
// the tree, watches on its live objects and on Drift records. Every time
// is the moment a watch delivered the event.
type observer struct {
	cache ctrlcache.Cache

	mu sync.Mutex
	// changed is closed and replaced on every Kustomization event, to wake
	// waiters.
	changed chan struct{}
	ks      map[string]*ksProgress
	edits   map[target]*edit
}

// ksProgress is when one Kustomization first reached each milestone, and
// its latest conditions for a timeout's message.
type ksProgress struct {
	applied, clean time.Time
	ready, drifted string
}

// edit is one live edit the observer waits on: it is complete when the
// object carries reflux's hold and its Drift record says Held with the
// edited value.
type edit struct {
	target           target
	value            string
	acked            time.Time
	heldAt, recordAt time.Time
	done             chan struct{}
}

// startObserver starts the Kustomization watch and waits until it has
// synced.
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
	o := &observer{cache: c, changed: make(chan struct{}), ks: map[string]*ksProgress{}, edits: map[target]*edit{}}
	if err := o.watch(ctx, &kustomizev1.Kustomization{}, false); err != nil {
		return nil, err
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			fmt.Println("benchmark watches stopped:", err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the benchmark's Kustomization watch did not sync")
	}
	return o, nil
}

// watchEdits adds the watches of Drift records and of the edited kinds
// (ConfigMaps, Deployments), and waits until they have synced. It runs
// after Flux has applied the tree, so that the benchmark's own watch of
// 10,000 objects being created does not share the apiserver with the
// apply Flux is timed on.
func (o *observer) watchEdits(ctx context.Context, kinds ...client.Object) error {
	for _, obj := range append(kinds, &refluxv1.Drift{}) {
		if err := o.watch(ctx, obj, true); err != nil {
			return err
		}
	}
	return nil
}

func (o *observer) watch(ctx context.Context, obj client.Object, block bool) error {
	inf, err := o.cache.GetInformer(ctx, obj, ctrlcache.BlockUntilSynced(block))
	if err != nil {
		return fmt.Errorf("watching %T: %w", obj, err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.observe(obj) },
		UpdateFunc: func(_, obj any) { o.observe(obj) },
	})
	return err
}

// observe is every watch's event handler.
func (o *observer) observe(obj any) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	switch obj := obj.(type) {
	case *kustomizev1.Kustomization:
		o.observeKustomization(obj, now)
	case *corev1.ConfigMap:
		o.observeLive("ConfigMap", obj, now)
	case *appsv1.Deployment:
		o.observeLive("Deployment", obj, now)
	case *refluxv1.Drift:
		ref := obj.Spec.Object
		e := o.edits[target{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}]
		if e != nil && e.recordAt.IsZero() && recordShows(obj, e.value) {
			e.recordAt = now
			e.finishIfDone()
		}
	}
}

func (o *observer) observeLive(kind string, obj client.Object, now time.Time) {
	e := o.edits[target{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}]
	if e != nil && e.heldAt.IsZero() && fixture.Held(obj) {
		e.heldAt = now
		e.finishIfDone()
	}
}

func (o *observer) observeKustomization(ks *kustomizev1.Kustomization, now time.Time) {
	p := o.ks[ks.Name]
	if p == nil {
		p = &ksProgress{}
		o.ks[ks.Name] = p
	}
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	drifted := apimeta.FindStatusCondition(ks.Status.Conditions, refluxv1.DriftedCondition)
	p.ready, p.drifted = fixture.Describe(ready), fixture.Describe(drifted)
	if p.applied.IsZero() && applied(ks, ready) {
		p.applied = now
	}
	if p.clean.IsZero() && strings.HasPrefix(p.drifted, fixture.Clean) {
		p.clean = now
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// applied is testenv.WaitForReady's test: Ready for the current generation,
// with the applied revision written (Flux patches its conditions before
// the rest of the status).
func applied(ks *kustomizev1.Kustomization, ready *metav1.Condition) bool {
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == ks.Generation &&
		ks.Status.LastAppliedRevision != "" && ks.Status.LastAppliedRevision == ks.Status.LastAttemptedRevision
}

// recordShows reports whether d is a Held record carrying value live.
func recordShows(d *refluxv1.Drift, value string) bool {
	if d.Status.State != refluxv1.DriftHeld {
		return false
	}
	want := strconv.Quote(value) // LiveValue is JSON
	return slices.ContainsFunc(d.Spec.Fields, func(f refluxv1.DriftField) bool { return f.LiveValue == want })
}

// milestone picks one of ksProgress's times.
type milestone func(*ksProgress) time.Time

func appliedAt(p *ksProgress) time.Time { return p.applied }
func cleanAt(p *ksProgress) time.Time   { return p.clean }

// waitAll waits, woken by the Kustomization watch, until every one of
// names has reached m, and returns when the last one did.
func (o *observer) waitAll(ctx context.Context, names []string, m milestone, timeout time.Duration) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		last, pending := o.reached(names, m)
		changed := o.changed
		o.mu.Unlock()
		if len(pending) == 0 {
			return last, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline.C:
			return time.Time{}, fmt.Errorf("after %s, %d of %d Kustomizations not there yet: %s",
				timeout, len(pending), len(names), o.explain(pending))
		}
	}
}

// reached returns the latest time any of names reached m, and those that
// have not.
func (o *observer) reached(names []string, m milestone) (time.Time, []string) {
	var last time.Time
	var pending []string
	for _, n := range names {
		p := o.ks[n]
		if p == nil || m(p).IsZero() {
			pending = append(pending, n)
			continue
		}
		if t := m(p); t.After(last) {
			last = t
		}
	}
	return last, pending
}

// explain describes up to five pending Kustomizations.
func (o *observer) explain(pending []string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	for _, n := range pending[:min(5, len(pending))] {
		p := o.ks[n]
		if p == nil {
			parts = append(parts, n+" never seen")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (Ready %s; Drifted %s)", n, p.ready, p.drifted))
	}
	return strings.Join(parts, "; ")
}

// expect registers the edit about to be made to t.
func (o *observer) expect(t target, value string) *edit {
	e := &edit{target: t, value: value, done: make(chan struct{})}
	o.mu.Lock()
	o.edits[t] = e
	o.mu.Unlock()
	return e
}

// acknowledged stamps the moment the apiserver answered the edit.
func (o *observer) acknowledged(e *edit, at time.Time) {
	o.mu.Lock()
	e.acked = at
	o.mu.Unlock()
}

// result reads an edit's times.
func (o *observer) result(e *edit) (acked, heldAt, recordAt time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return e.acked, e.heldAt, e.recordAt
}

// finishIfDone closes done once both the hold and the record are seen.
// The caller holds the observer's lock.
func (e *edit) finishIfDone() {
	if !e.heldAt.IsZero() && !e.recordAt.IsZero() {
		close(e.done)
	}
}

// unheld lists the live objects of the watched kinds that reflux does not
// hold yet.
func (o *observer) unheld(ctx context.Context) ([]target, error) {
	cms := &corev1.ConfigMapList{}
	if err := o.cache.List(ctx, cms); err != nil {
		return nil, err
	}
	deps := &appsv1.DeploymentList{}
	if err := o.cache.List(ctx, deps); err != nil {
		return nil, err
	}
	var out []target
	for i := range cms.Items {
		if !fixture.Held(&cms.Items[i]) {
			out = append(out, target{Kind: "ConfigMap", Namespace: cms.Items[i].Namespace, Name: cms.Items[i].Name})
		}
	}
	for i := range deps.Items {
		if !fixture.Held(&deps.Items[i]) {
			out = append(out, target{Kind: "Deployment", Namespace: deps.Items[i].Namespace, Name: deps.Items[i].Name})
		}
	}
	return out, nil
}

// progress counts the expected edits seen held, and seen recorded.
func (o *observer) progress() (held, recorded int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.edits {
		if !e.heldAt.IsZero() {
			held++
		}
		if !e.recordAt.IsZero() {
			recorded++
		}
	}
	return held, recorded
}
