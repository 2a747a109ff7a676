package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// noticeTimeout bounds one edit's wait to be noticed: two of
// kustomize-controller's 1m intervals, with its jitter and apply.
const noticeTimeout = 150 * time.Second

// timedEdit sets t's VALUE to value as `kubectl edit` does (a GET, then an
// Update under field manager kubectl-edit), with open calls to start the
// watches that time it, and returns the moment the apiserver answered.
func timedEdit(ctx context.Context, wc client.WithWatch, t target, value string,
	open func(rv string) ([]sighting, error)) (time.Time, []sighting, error) {
	i, err := configMapIndex(t.Name)
	if err != nil {
		return time.Time{}, nil, err
	}
	cm := &corev1.ConfigMap{}
	if err := wc.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Name}, cm); err != nil {
		return time.Time{}, nil, err
	}
	if cm.Data["VALUE"] != gitValue(i) || fixture.Held(cm) {
		return time.Time{}, nil, fmt.Errorf("%s is not as git declares it before the edit", t)
	}
	seen, err := open(cm.ResourceVersion)
	if err != nil {
		return time.Time{}, nil, err
	}
	cm.Data["VALUE"] = value
	if err := wc.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		return time.Time{}, nil, fmt.Errorf("editing %s: %w", t, err)
	}
	return time.Now(), seen, nil
}

// fluxReverts edits each target in turn, before reflux runs, and times
// kustomize-controller's revert: from the edit's acknowledgement to the
// watch delivering git's value again. Each target is in a Kustomization of
// its own, so each waits on an independent reconcile phase.
func fluxReverts(ctx context.Context, wc client.WithWatch, targets []target, run string) ([]time.Duration, error) {
	var out []time.Duration
	for n, t := range targets {
		i, err := configMapIndex(t.Name)
		if err != nil {
			return nil, err
		}
		git := gitValue(i)
		var stop func()
		acked, seen, err := timedEdit(ctx, wc, t, fmt.Sprintf("flux-%s-%d", run, n), func(rv string) ([]sighting, error) {
			s, st, err := configMapWatch(ctx, wc, t, rv, func(cm *corev1.ConfigMap) bool { return cm.Data["VALUE"] == git })
			stop = st
			return []sighting{s}, err
		})
		if err != nil {
			return nil, err
		}
		at, ok := await(ctx, seen[0], noticeTimeout)
		stop()
		if !ok {
			return nil, fmt.Errorf("kustomize-controller did not revert %s within %s", t, noticeTimeout)
		}
		out = append(out, at.Sub(acked))
	}
	return out, nil
}

// refluxNotices edits each target in turn and times reflux: from the
// edit's acknowledgement to the hold on the object, and to its Held Drift
// record carrying the edited value.
func refluxNotices(ctx context.Context, wc client.WithWatch, targets []target, run string) (hold, record []time.Duration, err error) {
	for n, t := range targets {
		value := fmt.Sprintf("reflux-%s-%d", run, n)
		var stops []func()
		acked, seen, err := timedEdit(ctx, wc, t, value, func(rv string) ([]sighting, error) {
			h, stopH, err := configMapWatch(ctx, wc, t, rv, func(cm *corev1.ConfigMap) bool { return fixture.Held(cm) })
			if err != nil {
				return nil, err
			}
			stops = append(stops, stopH)
			r, stopR, err := recordWatch(ctx, wc, t, value)
			if err != nil {
				return nil, err
			}
			stops = append(stops, stopR)
			return []sighting{h, r}, nil
		})
		if err != nil {
			return nil, nil, err
		}
		heldAt, okH := await(ctx, seen[0], noticeTimeout)
		recordAt, okR := await(ctx, seen[1], noticeTimeout)
		for _, stop := range stops {
			stop()
		}
		if !okH || !okR {
			return nil, nil, fmt.Errorf("reflux did not hold (%v) or record (%v) %s within %s", okH, okR, t, noticeTimeout)
		}
		hold = append(hold, heldAt.Sub(acked))
		record = append(record, recordAt.Sub(acked))
	}
	return hold, record, nil
}
