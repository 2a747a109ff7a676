package governor

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/record"
)

// WriteBackStatus is the outcome of a Kustomization's last write-back.
type WriteBackStatus struct {
	// Results has one entry per branch considered.
	Results []reverse.BranchResult
	// Err is why the last run failed; it is retried with backoff.
	Err string
	// At is when the run ended.
	At time.Time
}

// wbState is a Kustomization's write-back bookkeeping.
type wbState struct {
	// fingerprint and revision are what the last successful write wrote,
	// and the source revision it wrote on.
	fingerprint, revision string
	// checkedRevision and checkedAt are when branches were last checked.
	checkedRevision string
	checkedAt       time.Time
	// branches is true while reflux's branches may await review or
	// deletion: set by a push, cleared by a check that finds none.
	branches bool
	// failing is set while a failed run waits for its backoff: reports
	// must not queue it sooner.
	failing bool
	last    *WriteBackStatus
}

// dueInput is what decides whether write-back has work.
type dueInput struct {
	// Fingerprint is the open records' fingerprint; "" when none has a
	// field bound for Git.
	Fingerprint string
	// Branches is true when some open record names a branch.
	Branches bool
	// SourceRevision is the revision the source serves.
	SourceRevision string
	// Interval bounds branch checks: at most one per interval.
	Interval time.Duration
	Now      time.Time
}

// due decides, from plain data, whether to write and whether to check
// branches. A write is due when the drift set changed, or the source moved
// under open drift (its branch may need a rebase). While branches exist,
// they are checked on a new source revision (a merge makes one), at most
// once per interval otherwise, never in a loop, and before any write, so a
// branch a reviewer deleted is never pushed again and a merged one is
// deleted once its records resolve.
func due(st wbState, in dueInput) (write, check bool) {
	write = in.Fingerprint != st.fingerprint || in.Fingerprint != "" && in.SourceRevision != st.revision
	check = (in.Branches || st.branches) &&
		(write || in.SourceRevision != st.checkedRevision || in.Now.Sub(st.checkedAt) >= in.Interval)
	return write, check
}

// dueOf computes the due input of a Kustomization's records.
func dueOf(g *Governed, records []refluxv1.Drift, now time.Time) dueInput {
	in := dueInput{SourceRevision: g.SourceRevision, Interval: g.SourceInterval, Now: now}
	if in.Interval <= 0 {
		in.Interval = g.Kustomization.Spec.Interval.Duration
	}
	var writable []refluxv1.Drift
	for _, d := range record.Open(records) {
		if d.Status.Branch != "" {
			in.Branches = true
		}
		if !d.Spec.ManualHotfix && bound(d.Spec.Fields) {
			writable = append(writable, d)
		}
	}
	if len(writable) > 0 {
		in.Fingerprint = reverse.Fingerprint(writable)
	}
	return in
}

// bound reports whether a field is bound for Git.
func bound(fields []refluxv1.DriftField) bool {
	for _, f := range fields {
		if f.Action == refluxv1.MergeAction || f.Action == refluxv1.AlertAction {
			return true
		}
	}
	return false
}

// Report hands the engine a Kustomization's records, as the reconciler
// listed them from the cache: a write-back or a branch check is queued on
// the repository's worker when one is due.
func (gv *Governor) Report(id types.NamespacedName, records []refluxv1.Drift) {
	if gv.opts.Writer == nil {
		return
	}
	gv.mu.Lock()
	e := gv.entries[id]
	if e == nil || e.wb.failing {
		gv.mu.Unlock()
		return
	}
	if e.gov.Policy.Spec.Git.ReportOnly {
		// Nothing goes to Git: say so once, and never queue a run.
		first := e.wb.last == nil || len(e.wb.last.Results) != 1 || e.wb.last.Results[0].Outcome != refluxv1.ReportOnlyReason
		if first {
			e.wb.last = &WriteBackStatus{At: gv.now(), Results: []reverse.BranchResult{{Outcome: refluxv1.ReportOnlyReason,
				Reason: "policy is report-only: nothing is written to Git"}}}
		}
		gv.mu.Unlock()
		if first {
			gv.opts.Notify(id)
		}
		return
	}
	write, check := due(e.wb, dueOf(e.gov, records, gv.now()))
	repo := e.gov.RepoURL
	gv.mu.Unlock()
	if write || check {
		gv.wb.queue(repo).Add(id)
	}
}

// writeLaterDelay is how soon a deferred write-back looks again: about
// the audit log's batching, and well under a write-back's own duration.
const writeLaterDelay = 500 * time.Millisecond

// writebacks runs write-back: one worker per repository, so a slow or
// dead git server stalls only its own repository, with work coalesced per
// Kustomization.
type writebacks struct {
	gv      *Governor
	mu      sync.Mutex
	repos   map[string]workqueue.TypedRateLimitingInterface[types.NamespacedName]
	ctx     context.Context
	cancel  context.CancelFunc
	started chan struct{}
	wg      sync.WaitGroup
}

func newWritebacks(gv *Governor) *writebacks {
	ctx, cancel := context.WithCancel(context.Background())
	return &writebacks{gv: gv, repos: map[string]workqueue.TypedRateLimitingInterface[types.NamespacedName]{},
		ctx: ctx, cancel: cancel, started: make(chan struct{})}
}

// queue returns the repository's queue, starting its worker.
func (w *writebacks) queue(repo string) workqueue.TypedRateLimitingInterface[types.NamespacedName] {
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

func (w *writebacks) start() { close(w.started) }

func (w *writebacks) shutdown() {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.repos {
		q.ShutDown()
	}
}

func (w *writebacks) wait() { w.wg.Wait() }

// forget drops a Kustomization's queued write-back.
func (w *writebacks) forget(id types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.repos {
		q.Forget(id)
	}
}

func (w *writebacks) work(q workqueue.TypedRateLimitingInterface[types.NamespacedName]) {
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
		err := w.gv.writeBack(w.ctx, id)
		later := errors.Is(err, errWriteLater)
		w.gv.mu.Lock()
		if e := w.gv.entries[id]; e != nil {
			e.wb.failing = err != nil && !later
		}
		w.gv.mu.Unlock()
		switch {
		case later:
			// Nothing failed: the set moved on (a record closed, or its
			// writer is about to be known). Look again shortly.
			w.gv.opts.Log.V(1).Info("write-back deferred", "kustomization", id.String(), "why", err.Error())
			q.Forget(id)
			q.AddAfter(id, writeLaterDelay)
		case err != nil:
			w.gv.opts.Log.Error(err, "write-back failed; retrying with backoff", "kustomization", id.String())
			q.AddRateLimited(id)
		default:
			q.Forget(id)
		}
		q.Done(id)
	}
}

func (gv *Governor) writeBackFailed(id types.NamespacedName, err error) error {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	if e := gv.entries[id]; e != nil {
		e.wb.last = &WriteBackStatus{Results: []reverse.BranchResult{{Outcome: refluxv1.GitErrorReason, Reason: err.Error()}},
			Err: err.Error(), At: gv.now()}
	}
	gv.opts.Metrics.observeWriteBack(refluxv1.GitErrorReason, 0)
	gv.opts.Notify(id)
	return err
}

func (gv *Governor) saveWriteBack(id types.NamespacedName, st wbState, results []reverse.BranchResult, err error) {
	gv.mu.Lock()
	if e := gv.entries[id]; e != nil {
		last := e.wb.last
		e.wb = st
		e.wb.last = last
		if len(results) > 0 || err != nil {
			e.wb.last = &WriteBackStatus{Results: results, At: gv.now()}
			if err != nil {
				e.wb.last.Err = err.Error()
			}
		}
	}
	gv.mu.Unlock()
	gv.opts.Notify(id)
}
