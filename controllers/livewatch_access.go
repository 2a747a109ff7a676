package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// WatchForbiddenError is a live watch the apiserver refuses reflux: its
// RBAC does not grant list or watch on a kind a Kustomization applies.
// With an explicit list of kinds (config/rbac's reflux-workloads, issue
// 11) this is what a kind nobody added looks like.
type WatchForbiddenError struct {
	// GVK is the kind watched; Resource its resource.
	GVK      schema.GroupVersionKind
	Resource schema.GroupResource
	// Namespace is the namespace of a restricted watch, "" for the whole
	// cluster.
	Namespace string
	// Verb is the verb refused: list or watch.
	Verb string
	// Err is the apiserver's answer.
	Err error
}

func (e *WatchForbiddenError) Error() string {
	where := ""
	if e.Namespace != "" {
		where = " in namespace " + e.Namespace
	}
	return fmt.Sprintf("reflux may not %s %s (kind %s)%s: %s", e.Verb, e.Resource, e.GVK.Kind, where, e.Fix())
}

func (e *WatchForbiddenError) Unwrap() error { return e.Err }

// Fix says how to grant the watch.
func (e *WatchForbiddenError) Fix() string {
	if e.GVK.Group == "" && e.GVK.Kind == "Secret" {
		return "reading Secrets is opt-in, include config/components/secrets"
	}
	return fmt.Sprintf("grant get, list, watch and patch on it in a ClusterRole labelled %s: \"true\"",
		refluxv1.WorkloadsAggregationLabel)
}

// forbiddenAs returns err as a WatchForbiddenError when the apiserver
// refused verb, else err itself.
func forbiddenAs(err error, verb string, gvk schema.GroupVersionKind, res schema.GroupResource, namespace string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	return &WatchForbiddenError{GVK: gvk, Resource: res, Namespace: namespace, Verb: verb, Err: err}
}

// access is whether one informer's watch is allowed. Its reflector reports
// refusals (onWatchError) and successful watches (allowed); a change is
// logged once and handed to changed, never each retry.
type access struct {
	mu      sync.Mutex
	denied  *WatchForbiddenError
	changed func(schema.GroupVersionKind)
	log     func(err *WatchForbiddenError, allowed bool)
}

// onWatchError is the informer's WatchErrorHandler: a refusal is
// recorded; any other error is client-go's to report.
func (a *access) onWatchError(ctx context.Context, r *toolscache.Reflector, err error) {
	var denied *WatchForbiddenError
	if !errors.As(err, &denied) {
		toolscache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	a.mu.Lock()
	same := a.denied != nil && a.denied.Verb == denied.Verb
	a.denied = denied
	a.mu.Unlock()
	if !same {
		a.log(denied, false)
		a.changed(denied.GVK)
	}
}

// allowed records a watch the apiserver accepted: whatever was refused
// before has been granted since.
func (a *access) allowed() {
	a.mu.Lock()
	was := a.denied
	a.denied = nil
	a.mu.Unlock()
	if was != nil {
		a.log(was, true)
		a.changed(was.GVK)
	}
}

func (a *access) refused() *WatchForbiddenError {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.denied
}

// OnAccessChange sets fn to be called, on an informer's goroutine, with
// each Kustomization using a kind whose watch was just refused or allowed
// again: fn must not block. The Kustomization reconciler reports it
// (Forbidden) in the Drifted condition.
func (w *Watcher) OnAccessChange(fn func(types.NamespacedName)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onAccess = fn
}

// accessChanged tells the Kustomizations using gvk.
func (w *Watcher) accessChanged(gvk schema.GroupVersionKind) {
	w.mu.Lock()
	fn := w.onAccess
	var users []types.NamespacedName
	for ks, kinds := range w.users {
		if kinds[gvk] {
			users = append(users, ks)
		}
	}
	w.mu.Unlock()
	if fn == nil {
		return
	}
	for _, ks := range users {
		fn(ks)
	}
}

// logAccess logs a refused watch, and its grant later, once each.
func (w *Watcher) logAccess(err *WatchForbiddenError, allowed bool) {
	kv := []any{"kind", err.GVK.String(), "verb", err.Verb, "resource", err.Resource.String()}
	if err.Namespace != "" {
		kv = append(kv, "namespace", err.Namespace)
	}
	if allowed {
		w.opts.Log.Info("watch allowed: drift of the kind is detected again", kv...)
		return
	}
	w.opts.Log.Error(err.Err, "watch forbidden: drift of the kind is not detected until it is granted",
		append(kv, "fix", err.Fix())...)
}

// Forbidden returns the refused watches of the kinds ks uses, by kind and
// namespace.
func (w *Watcher) Forbidden(ks types.NamespacedName) []*WatchForbiddenError {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*WatchForbiddenError
	for gvk := range w.users[ks] {
		inf, ok := w.informers[gvk]
		if !ok {
			continue
		}
		for _, a := range inf.access {
			if err := a.refused(); err != nil {
				out = append(out, err)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GVK != out[j].GVK {
			return out[i].GVK.String() < out[j].GVK.String()
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out
}
