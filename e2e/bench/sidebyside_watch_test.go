package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// sighting is the moment a watch first delivered an object that matched.
type sighting <-chan time.Time

// watchFor opens a watch on list's kind with opts and returns when it first
// delivers an object match accepts. The watch is opened before the edit it
// times, so the event's arrival, not the watch's setup, is measured.
func watchFor(ctx context.Context, wc client.WithWatch, list client.ObjectList, match func(runtime.Object) bool,
	opts ...client.ListOption) (sighting, func(), error) {
	w, err := wc.Watch(ctx, list, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("watching %T: %w", list, err)
	}
	seen := make(chan time.Time, 1)
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if match(ev.Object) {
				seen <- time.Now()
				return
			}
		}
	}()
	return seen, w.Stop, nil
}

// configMapWatch watches one ConfigMap from resourceVersion rv on.
func configMapWatch(ctx context.Context, wc client.WithWatch, t target, rv string, match func(*corev1.ConfigMap) bool) (sighting, func(), error) {
	return watchFor(ctx, wc, &corev1.ConfigMapList{}, func(o runtime.Object) bool {
		cm, ok := o.(*corev1.ConfigMap)
		return ok && match(cm)
	}, &client.ListOptions{
		Namespace:     t.Namespace,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", t.Name),
		Raw:           &metav1.ListOptions{ResourceVersion: rv},
	})
}

// recordWatch watches the Drift records, which live beside their
// Kustomization, until one shows t held with value live.
func recordWatch(ctx context.Context, wc client.WithWatch, t target, value string) (sighting, func(), error) {
	return watchFor(ctx, wc, &refluxv1.DriftList{}, func(o runtime.Object) bool {
		d, ok := o.(*refluxv1.Drift)
		return ok && d.Spec.Object.Kind == "ConfigMap" && d.Spec.Object.Namespace == t.Namespace &&
			d.Spec.Object.Name == t.Name && recordShows(d, value)
	}, client.InNamespace(fluxNS))
}

// await waits for s until timeout; ok is false when it did not come.
func await(ctx context.Context, s sighting, timeout time.Duration) (time.Time, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case at := <-s:
		return at, true
	case <-timer.C:
	case <-ctx.Done():
	}
	return time.Time{}, false
}
