package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/evaluate"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// errWriteLater means the run found nothing wrong but must not write yet:
// a record on a branch awaits its audited writer, or the set changed
// while it was written. The worker runs it again soon, without backoff.
var errWriteLater = errors.New("write-back deferred")

// writeBack runs one Kustomization's due write-back: branch checks, then
// the write, each result applied to the records by the executor.
func (s *Scheduler) writeBack(ctx context.Context, id types.NamespacedName) error {
	snap, ok := s.opts.Engine.Snapshot(id)
	if !ok {
		return nil
	}
	if s.yield(id) {
		// Before the list below: that read is itself a share of the
		// apiserver the live path is waiting on.
		return errWriteLater
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	start := s.now()
	// A fresh read: the cache may not show the Proposed state the last run
	// wrote a moment ago, and acting on it would push that branch again.
	list := &refluxv1.DriftList{}
	if err := s.opts.APIReader.List(ctx, list, client.InNamespace(id.Namespace), client.MatchingLabels{
		record.KustomizationNameLabel: id.Name, record.KustomizationNamespaceLabel: id.Namespace,
	}); err != nil {
		return s.failed(id, fmt.Errorf("listing drift records: %w", err))
	}
	s.mu.Lock()
	st := *s.stateLocked(id)
	s.mu.Unlock()
	sealed := s.sealed(list.Items)
	records, wait := s.attributed(id, sealed)
	if wait {
		return errWriteLater
	}
	in := dueOf(snap.Gov, records, start)
	write, check := due(st, in)
	if !write && !check {
		return nil
	}
	set := s.driftSet(snap, records, sealed)
	if err := s.opts.Targets.Resolve(ctx, snap.Gov, &set); err != nil {
		return s.failed(id, err)
	}
	if check {
		pending, err := s.checkBranches(ctx, snap, &set)
		if err != nil {
			return s.failed(id, err)
		}
		// A merged branch its record still waits on is kept, and checked
		// again once the record resolves.
		st.checkedRevision, st.checkedAt, st.branches = in.SourceRevision, s.now(), pending > 0 || in.Branches
	}
	var results []reverse.BranchResult
	if write {
		var err error
		if results, err = s.write(ctx, snap, &set); err != nil {
			if errors.Is(err, writeback.ErrSuperseded) {
				return errWriteLater
			}
			s.save(id, st, results, err)
			return err
		}
		st.fingerprint, st.revision = in.Fingerprint, in.SourceRevision
		for _, r := range results {
			if r.Branch != "" && r.Outcome != refluxv1.WithdrawnReason {
				st.branches = true
			}
		}
	}
	s.observeWriteBack("", s.now().Sub(start))
	s.save(id, st, results, nil)
	return nil
}

// driftSet is what write-back is handed: the open records a render filled
// in (never a Pending one), sorted, and the closed ones that still name a
// branch, for the comment that closes its pull request.
func (s *Scheduler) driftSet(snap reverse.Snapshot, records, sealed []refluxv1.Drift) reverse.DriftSet {
	set := reverse.DriftSet{Kustomization: snap.Gov.Ref(), Spec: snap.Gov.Kustomization, Policy: snap.Gov.Policy,
		Revision: snap.Gov.Kustomization.Status.LastAppliedRevision, Records: record.Evaluated(records),
		SubstituteFrom: snap.Gov.SubstituteFrom}
	for _, d := range sealed {
		if record.IsOpen(&d) || d.Status.Branch == "" {
			continue
		}
		if d.Status.Closed == nil && d.Annotations[refluxv1.DismissAnnotation] == "true" {
			// Asked to be dismissed, so off the branch already, but the
			// dismissal is not written yet: the comment that closes the
			// pull request names it as dismissed all the same.
			d.Status.State = refluxv1.DriftDismissed
			d.Status.Closed = decide.Dismissal(&d, s.now())
		}
		if c := d.Status.Closed; c != nil && !strings.Contains(c.By, "(") {
			// The audit log batches its events, so the user behind a
			// dismissal often arrives after the close was written; the
			// comment that closes the pull request names them all the same.
			if by := s.closedBy(&d, c); by != "" {
				d.Status.Closed = c.DeepCopy()
				d.Status.Closed.By = by
			}
		}
		set.Closed = append(set.Closed, d)
	}
	if snap.Current {
		set.Render = snap.Render
	}
	sort.Slice(set.Records, func(i, j int) bool { return set.Records[i].Name < set.Records[j].Name })
	return set
}

// checkBranches dismisses the records whose pushed branch a reviewer
// closed, drops them from the set, and reports the branches it retired.
// It returns how many branches await review.
func (s *Scheduler) checkBranches(ctx context.Context, snap reverse.Snapshot, set *reverse.DriftSet) (int, error) {
	set.Withdraw = s.withdrawFunc(snap, set)
	bc, err := s.opts.Writer.Check(ctx, *set)
	if err != nil {
		return 0, fmt.Errorf("checking reflux branches: %w", err)
	}
	if s.opts.Metrics != nil {
		s.opts.Metrics.SetPending(snap.Gov.Key(), len(bc.Pending))
		s.opts.Metrics.SetPullRequests(snap.Gov.Key(), bc)
	}
	s.deletedBranchEvents(snap, bc.DeletedClosed)
	s.writeBackEvents(snap, bc.Retired)
	closed := map[string]reverse.ClosedRecord{}
	for _, c := range bc.Closed {
		closed[c.Name] = c
	}
	kept := set.Records[:0:0]
	for _, d := range set.Records {
		c, ok := closed[d.Name]
		if !ok {
			kept = append(kept, d)
			continue
		}
		ev := decide.Branch{Event: decide.Closed, Branch: d.Status.Branch, Reason: c.Reason, Message: c.Message}
		if err := s.onBranch(ctx, snap, d, ev); err != nil {
			return 0, err
		}
	}
	set.Records = kept
	return len(bc.Pending), nil
}

// write writes the set, recording the intent before each push, taking
// records off a branch before it is closed, and the outcome after.
func (s *Scheduler) write(ctx context.Context, snap reverse.Snapshot, set *reverse.DriftSet) ([]reverse.BranchResult, error) {
	set.Fingerprint = reverse.Fingerprint(set.Records)
	set.Intent = s.intentFunc(snap, set)
	set.Withdraw = s.withdrawFunc(snap, set)
	results, err := s.opts.Writer.Write(ctx, *set)
	if err == nil && len(results) == 0 {
		// Nothing left to write: say so, rather than keep reporting the
		// last branch as if it still carried open drift.
		results = []reverse.BranchResult{{Outcome: refluxv1.UpToDateReason, Reason: "no open drift to write back"}}
	}
	errs := []error{err}
	for _, r := range results {
		s.observeWriteBack(r.Outcome, 0)
		errs = append(errs, s.applyResult(ctx, snap, set, r))
	}
	if err == nil {
		errs = append(errs, s.withdrawUnwritten(ctx, snap, set, results))
	}
	s.writeBackEvents(snap, results)
	if err == nil {
		s.setPending(snap, results)
	}
	if err := errors.Join(errs...); err != nil {
		return results, fmt.Errorf("writing drift set %s: %w", set.Fingerprint, err)
	}
	return results, nil
}

// applyResult records one branch's outcome on its records.
func (s *Scheduler) applyResult(ctx context.Context, snap reverse.Snapshot, set *reverse.DriftSet, r reverse.BranchResult) error {
	byName := recordsByName(set.Records)
	var errs []error
	for name, why := range r.NotWritten {
		ev := decide.Branch{Event: decide.NotWritten, Reason: refluxv1.RefusedReason, Message: why, Now: s.now()}
		errs = append(errs, s.onBranch(ctx, snap, byName[name], ev))
	}
	ev := decide.Branch{Branch: r.Branch, Commit: r.Commit, Fingerprint: r.Fingerprint, PullRequest: r.PullRequest,
		PullRequestClosed: r.PullRequestState == string(forge.Closed), Now: s.now()}
	switch {
	// A pull request the forge failed to open leaves the branch pushed.
	case r.Branch != "" && r.Commit != "" && leftPushed(r.Outcome):
		ev.Event = decide.Pushed
	case r.Outcome == refluxv1.GitErrorReason || r.Outcome == string(writeback.Superseded):
		ev.Event = decide.Abandoned
	default:
		return errors.Join(errs...)
	}
	for _, name := range r.Records {
		errs = append(errs, s.onBranch(ctx, snap, byName[name], ev))
	}
	return errors.Join(errs...)
}

// withdrawUnwritten takes off its branch every open record no branch
// carries now: its fields left every kind's group (now Ignore, or a
// hotfix), so the branch it names was rebuilt without it.
func (s *Scheduler) withdrawUnwritten(ctx context.Context, snap reverse.Snapshot, set *reverse.DriftSet, results []reverse.BranchResult) error {
	mentioned := map[string]bool{}
	for _, r := range results {
		for _, n := range r.Records {
			mentioned[n] = true
		}
		for n := range r.NotWritten {
			mentioned[n] = true
		}
	}
	var errs []error
	for _, d := range set.Records {
		if d.Status.Branch == "" || mentioned[d.Name] {
			continue
		}
		ev := decide.Branch{Event: decide.Withdrawn, Branch: d.Status.Branch, Reason: refluxv1.WithdrawnReason,
			Message: "no field of the record is bound for Git any more", Now: s.now()}
		errs = append(errs, s.onBranch(ctx, snap, d, ev))
	}
	return errors.Join(errs...)
}

func recordsByName(records []refluxv1.Drift) map[string]refluxv1.Drift {
	out := make(map[string]refluxv1.Drift, len(records))
	for _, d := range records {
		out[d.Name] = d
	}
	return out
}

// onBranch applies one write-back transition to a record.
func (s *Scheduler) onBranch(ctx context.Context, snap reverse.Snapshot, d refluxv1.Drift, ev decide.Branch) error {
	if d.Name == "" {
		return nil
	}
	if ev.Now.IsZero() {
		ev.Now = s.now()
	}
	obj := d.Spec.Object
	p := execute.Plan{Name: d.Name, Namespace: d.Namespace, Object: obj, Kustomization: snap.Gov.Kustomization, As: snap.Gov.Identity}
	gvk := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind)
	return s.opts.Records.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		live, ok := s.opts.Live.Get(gvk, obj.Namespace, obj.Name)
		return decide.OnBranch(rec, ev, ok && evaluate.Held(live, d.Name)), nil
	})
}

// failed records a run that failed before it wrote anything.
func (s *Scheduler) failed(id types.NamespacedName, err error) error {
	s.mu.Lock()
	if st := s.states[id]; st != nil {
		st.last = &WriteBackStatus{Results: []reverse.BranchResult{{Outcome: refluxv1.GitErrorReason, Reason: err.Error()}},
			Err: err.Error(), At: s.now()}
	}
	s.mu.Unlock()
	s.observeWriteBack(refluxv1.GitErrorReason, 0)
	s.opts.Notify(id)
	return err
}

// save keeps a run's bookkeeping and, when it had any, its outcome.
func (s *Scheduler) save(id types.NamespacedName, st state, results []reverse.BranchResult, err error) {
	s.mu.Lock()
	if cur := s.states[id]; cur != nil {
		last := cur.last
		*cur = st
		cur.last = last
		if len(results) > 0 || err != nil {
			cur.last = &WriteBackStatus{Results: results, At: s.now()}
			if err != nil {
				cur.last.Err = err.Error()
			}
		}
	}
	s.mu.Unlock()
	s.opts.Notify(id)
}

// setPending counts the branches a successful write leaves awaiting
// review, so the gauge follows a push at once rather than at the next
// branch check, which may be an interval away.
func (s *Scheduler) setPending(snap reverse.Snapshot, results []reverse.BranchResult) {
	if s.opts.Metrics == nil {
		return
	}
	n := 0
	for _, r := range results {
		if leftPushed(r.Outcome) && r.Branch != "" {
			n++
		}
	}
	s.opts.Metrics.SetPending(snap.Gov.Key(), n)
}

func (s *Scheduler) observeWriteBack(result string, took time.Duration) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.ObserveWriteBack(result, took)
	}
}

// sealed keeps the records whose seal verifies: the only ones reflux
// acts on.
func (s *Scheduler) sealed(all []refluxv1.Drift) []refluxv1.Drift {
	out := make([]refluxv1.Drift, 0, len(all))
	for i := range all {
		if s.opts.Sealer.Verify(&all[i]) == nil {
			out = append(out, all[i])
		}
	}
	return out
}

// leftPushed reports whether a write-back of outcome left its branch
// pushed: written, already written, or pushed with a pull request the
// forge failed to open or refused the token (TokenReadOnly).
func leftPushed(outcome string) bool {
	switch outcome {
	case refluxv1.BranchPushedReason, refluxv1.UpToDateReason, refluxv1.PullRequestFailedReason, refluxv1.TokenReadOnlyReason:
		return true
	}
	return false
}
