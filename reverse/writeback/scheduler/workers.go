package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// writeLaterDelay is how soon a deferred write-back looks again: about
// the audit log's batching, and well under a write-back's own duration.
const writeLaterDelay = 500 * time.Millisecond

// workers run write-back: one worker per repository, so a slow or dead
// git server stalls only its own repository, with work coalesced per
// Kustomization.
type workers struct {
	s       *Scheduler
	mu      sync.Mutex
	repos   map[string]workqueue.TypedRateLimitingInterface[types.NamespacedName]
	ctx     context.Context
	cancel  context.CancelFunc
	started chan struct{}
	wg      sync.WaitGroup
}

func newWorkers(s *Scheduler) *workers {
	ctx, cancel := context.WithCancel(context.Background())
	return &workers{s: s, repos: map[string]workqueue.TypedRateLimitingInterface[types.NamespacedName]{},
		ctx: ctx, cancel: cancel, started: make(chan struct{})}
}

// queue returns the repository's queue, starting its worker.
func (w *workers) queue(repo string) workqueue.TypedRateLimitingInterface[types.NamespacedName] {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.repos[repo]
	if q == nil {
		q = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](time.Second, 5*time.Minute),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "reflux-writeback"})
		w.repos[repo] = q
		w.wg.Add(1)
		go w.work(q)
	}
	return q
}

func (w *workers) start() { close(w.started) }

func (w *workers) shutdown() {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.repos {
		q.ShutDown()
	}
}

func (w *workers) wait() { w.wg.Wait() }

// forget drops a Kustomization's queued write-back.
func (w *workers) forget(id types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.repos {
		q.Forget(id)
	}
}

func (w *workers) work(q workqueue.TypedRateLimitingInterface[types.NamespacedName]) {
	defer w.wg.Done()
	select {
	case <-w.started:
	case <-w.ctx.Done():
		return
	}
	for {
		id, shutdown := q.Get()
		if shutdown {
			return
		}
		err := w.s.writeBack(w.ctx, id)
		later := errors.Is(err, errWriteLater)
		w.s.mu.Lock()
		if st := w.s.states[id]; st != nil {
			st.failing = err != nil && !later
		}
		w.s.mu.Unlock()
		switch {
		case later:
			// Nothing failed: the set moved on (a record closed, or its
			// writer is about to be known). Look again shortly.
			w.s.opts.Log.V(1).Info("write-back deferred", "kustomization", id.String(), "why", err.Error())
			q.Forget(id)
			q.AddAfter(id, writeLaterDelay)
		case err != nil:
			w.s.opts.Log.Error(err, "write-back failed; retrying with backoff", "kustomization", id.String())
			q.AddRateLimited(id)
		default:
			q.Forget(id)
		}
		q.Done(id)
	}
}
