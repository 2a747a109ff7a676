package soak

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// pacePeriod is how often the paced soak has Flux reconcile each tenant.
const pacePeriod = 10 * time.Second

// pacer has Flux fetch and apply every tenant in turn, as its interval
// would, but never while a process fault is under way, and holds the
// load's edits back meanwhile. The gaps the soak found around a leader's
// death are so kept out of the short variant: a live edit made while no
// replica leads, and reverted by Flux before the next leader looks, is
// lost, because nothing in reflux watches then; a deletion made while
// none leads is never recorded, though the object is still missing when
// the next leader starts; and an edit made then once ended with no open
// record and no hold, so Flux reverted it (not analysed yet). The
// full soak, with Flux on its own interval and edits at any time,
// measures them. The short soak runs paced, so that it passes or fails
// on what reflux promises today: faults in write-back, the apiserver, the
// git server and the forge, and reviewers, under live edits.
type pacer struct {
	// mu is held by the pacer while Flux applies, and by a process fault
	// from its start until every edit made before its end is recorded.
	mu sync.Mutex
	// faulting is set while a process fault holds mu.
	faulting atomic.Bool
	objs     []client.Object
	applied  int
}

// run reconciles every pacePeriod until ctx ends.
func (p *pacer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(pacePeriod): // Flux's interval, played by the harness
		}
		p.mu.Lock()
		for _, o := range p.objs {
			// A reconcile that fails (the git server down) is Flux's
			// business; the next one tries again.
			if env.Reconcile(ctx, o.DeepCopyObject().(client.Object)) == nil {
				p.applied++
			}
		}
		p.mu.Unlock()
	}
}

// caughtUp waits until every edit made before t0 is in a record: the
// leader after a fault has seen what was done while none led.
func (s *soak) caughtUp(ctx context.Context, t0 time.Time) error {
	var missing []timedEdit
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, leaderWait, true, func(ctx context.Context) (bool, error) {
		var m []timedEdit
		if m, last = s.unrecorded(ctx, t0); last == nil {
			missing = m
		}
		return last == nil && len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d edits made before %s still unrecorded, such as %+v: %w", len(missing), t0.Format(time.TimeOnly),
			missing[:min(len(missing), 5)], err)
	}
	return nil
}

// unrecorded returns the edits made before t0 that no record carries.
func (s *soak) unrecorded(ctx context.Context, t0 time.Time) ([]timedEdit, error) {
	s.ld.l.mu.Lock()
	timed := append([]timedEdit(nil), s.ld.l.timed...)
	uncertain := make(map[objKey]bool, len(s.ld.l.uncertain))
	for k := range s.ld.l.uncertain {
		uncertain[k] = true
	}
	s.ld.l.mu.Unlock()
	have := map[objKey]map[string]bool{}
	for _, t := range append(append([]*tenant(nil), s.tenants...), s.reviewTenants()...) {
		list := &refluxv1.DriftList{}
		if err := env.Client.List(ctx, list, client.InNamespace(t.Name)); err != nil {
			return nil, err
		}
		for _, d := range list.Items {
			k := objKey{Tenant: t.Name, Name: d.Spec.Object.Name}
			if have[k] == nil {
				have[k] = map[string]bool{}
			}
			for _, f := range d.Spec.Fields {
				if f.Pointer != refluxv1.WholeObjectPointer || f.DeletesObject() {
					have[k][f.Pointer] = true
				}
			}
		}
	}
	var out []timedEdit
	for _, e := range timed {
		if e.At.Before(t0) && !uncertain[e.Key] && !have[e.Key][e.Pointer] {
			out = append(out, e)
		}
	}
	return s.unheld(ctx, out)
}

// unheld leaves out the edits of objects reflux holds: Flux skips them,
// so their edits wait safely for the resync that records them (reflux
// reads a held object's new fields at its next resync, which a reconcile
// of its Kustomization starts).
func (s *soak) unheld(ctx context.Context, edits []timedEdit) ([]timedEdit, error) {
	var out []timedEdit
	for _, e := range edits {
		if e.Pointer != refluxv1.WholeObjectPointer {
			cm := &corev1.ConfigMap{}
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: e.Key.Tenant, Name: e.Key.Name}, cm)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
			if err == nil && fixture.Held(cm) {
				continue
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// reviewTenants are the reviewed tenants.
func (s *soak) reviewTenants() []*tenant {
	var out []*tenant
	for _, r := range s.reviews {
		out = append(out, r.tenant)
	}
	return out
}

// count is how many reconciles the pacer had Flux make.
func (p *pacer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}
