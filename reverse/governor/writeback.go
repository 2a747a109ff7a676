package governor

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
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
		w.gv.mu.Lock()
		if e := w.gv.entries[id]; e != nil {
			e.wb.failing = err != nil
		}
		w.gv.mu.Unlock()
		if err != nil {
			w.gv.opts.Log.Error(err, "write-back failed; retrying with backoff", "kustomization", id.String())
			q.AddRateLimited(id)
		} else {
			q.Forget(id)
		}
		q.Done(id)
	}
}

// writeBack runs one Kustomization's due write-back: branch checks, then
// the write, each result applied to the records by the executor.
func (gv *Governor) writeBack(ctx context.Context, id types.NamespacedName) error {
	snap, ok := gv.snapshotOf(id)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, gv.opts.WriteBackTimeout)
	defer cancel()
	start := gv.now()
	// A fresh read: the cache may not show the Proposed state the last run
	// wrote a moment ago, and acting on it would push that branch again.
	list := &refluxv1.DriftList{}
	if err := gv.opts.APIReader.List(ctx, list, client.InNamespace(id.Namespace), client.MatchingLabels{
		record.KustomizationNameLabel: id.Name, record.KustomizationNamespaceLabel: id.Namespace,
	}); err != nil {
		return gv.writeBackFailed(id, fmt.Errorf("listing drift records: %w", err))
	}
	gv.mu.Lock()
	var st wbState
	if e := gv.entries[id]; e != nil {
		st = e.wb
	}
	gv.mu.Unlock()
	list.Items = gv.attributed(id, gv.Sealed(list.Items))
	in := dueOf(snap.gov, list.Items, start)
	write, check := due(st, in)
	if !write && !check {
		return nil
	}
	set := reverse.DriftSet{Kustomization: snap.gov.ref(), Spec: snap.gov.Kustomization, Policy: snap.gov.Policy,
		Revision: snap.gov.Kustomization.Status.LastAppliedRevision, Records: record.Open(list.Items),
		SubstituteFrom: snap.gov.SubstituteFrom}
	if snap.current {
		set.Render = snap.render
	}
	sort.Slice(set.Records, func(i, j int) bool { return set.Records[i].Name < set.Records[j].Name })
	if err := gv.opts.Targets.Resolve(ctx, snap.gov, &set); err != nil {
		return gv.writeBackFailed(id, err)
	}
	if check {
		pending, err := gv.checkBranches(ctx, snap, &set)
		if err != nil {
			return gv.writeBackFailed(id, err)
		}
		// A merged branch its record still waits on is kept, and checked
		// again once the record resolves.
		st.checkedRevision, st.checkedAt, st.branches = in.SourceRevision, gv.now(), pending > 0 || in.Branches
	}
	var results []reverse.BranchResult
	if write {
		var err error
		if results, err = gv.write(ctx, snap, &set); err != nil {
			gv.saveWriteBack(id, st, results, err)
			return err
		}
		st.fingerprint, st.revision = in.Fingerprint, in.SourceRevision
		for _, r := range results {
			if r.Branch != "" {
				st.branches = true
			}
		}
	}
	gv.opts.Metrics.observeWriteBack("", gv.now().Sub(start))
	gv.saveWriteBack(id, st, results, nil)
	return nil
}

// checkBranches dismisses the records whose pushed branch a reviewer
// deleted, and drops them from the set. It returns how many branches
// await review.
func (gv *Governor) checkBranches(ctx context.Context, snap snapshot, set *reverse.DriftSet) (int, error) {
	bc, err := gv.opts.Writer.Check(ctx, *set)
	if err != nil {
		return 0, fmt.Errorf("checking reflux branches: %w", err)
	}
	gv.opts.Metrics.setPending(snap.gov.Key(), len(bc.Pending))
	gv.opts.Metrics.setPullRequests(snap.gov.Key(), bc)
	gv.deletedBranchEvents(snap, bc.DeletedClosed)
	closed := map[string]bool{}
	for _, name := range bc.Closed {
		closed[name] = true
	}
	kept := set.Records[:0:0]
	for _, d := range set.Records {
		if !closed[d.Name] {
			kept = append(kept, d)
			continue
		}
		if err := gv.onBranch(ctx, snap, d, decide.Branch{Event: decide.Closed, Branch: d.Status.Branch}); err != nil {
			return 0, err
		}
	}
	set.Records = kept
	return len(bc.Pending), nil
}

// write writes the set, recording the intent before each push and the
// outcome after.
func (gv *Governor) write(ctx context.Context, snap snapshot, set *reverse.DriftSet) ([]reverse.BranchResult, error) {
	byName := map[string]refluxv1.Drift{}
	for _, d := range set.Records {
		byName[d.Name] = d
	}
	intended := map[string][]string{}
	set.Fingerprint = reverse.Fingerprint(set.Records)
	set.Intent = func(ctx context.Context, branch, fingerprint string, records []string) error {
		for _, name := range records {
			if err := gv.onBranch(ctx, snap, byName[name], decide.Branch{Event: decide.Intended, Branch: branch, Fingerprint: fingerprint}); err != nil {
				return err
			}
		}
		intended[branch] = records
		return nil
	}
	results, err := gv.opts.Writer.Write(ctx, *set)
	if err == nil && len(results) == 0 {
		// Nothing left to write: say so, rather than keep reporting the
		// last branch as if it still carried open drift.
		results = []reverse.BranchResult{{Outcome: refluxv1.UpToDateReason, Reason: "no open drift to write back"}}
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range results {
		gv.opts.Metrics.observeWriteBack(r.Outcome, 0)
		ev := decide.Branch{Branch: r.Branch, Commit: r.Commit, Fingerprint: r.Fingerprint, PullRequest: r.PullRequest}
		switch {
		// A pull request the forge failed to open leaves the branch pushed.
		case r.Branch != "" && r.Commit != "" && (r.Outcome == refluxv1.BranchPushedReason || r.Outcome == refluxv1.UpToDateReason ||
			r.Outcome == refluxv1.PullRequestFailedReason):
			ev.Event = decide.Pushed
		case len(intended[r.Branch]) > 0:
			ev.Event = decide.Abandoned
		default:
			continue
		}
		for _, name := range r.Records {
			if err := gv.onBranch(ctx, snap, byName[name], ev); err != nil {
				errs = append(errs, err)
			}
		}
	}
	gv.writeBackEvents(snap, results)
	if len(errs) > 0 {
		return results, fmt.Errorf("writing drift set %s: %v", set.Fingerprint, errs)
	}
	return results, nil
}

// onBranch applies one write-back transition to a record.
func (gv *Governor) onBranch(ctx context.Context, snap snapshot, d refluxv1.Drift, ev decide.Branch) error {
	if d.Name == "" {
		return nil
	}
	obj := d.Spec.Object
	p := plan{name: d.Name, namespace: d.Namespace, obj: obj, ks: snap.gov.Kustomization}
	gvk := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind)
	return gv.exec.withRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		live, ok := gv.opts.Live.Get(gvk, obj.Namespace, obj.Name)
		return decide.OnBranch(rec, ev, ok && held(live, d.Name)), nil
	})
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
