package governor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/writeback"
)

// errWriteLater means the run found nothing wrong but must not write yet:
// a record on a branch awaits its audited writer, or the set changed
// while it was written. The worker runs it again soon, without backoff.
var errWriteLater = errors.New("write-back deferred")

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
	sealed := gv.Sealed(list.Items)
	records, wait := gv.attributed(id, sealed)
	if wait {
		return errWriteLater
	}
	in := dueOf(snap.gov, records, start)
	write, check := due(st, in)
	if !write && !check {
		return nil
	}
	set := gv.driftSet(snap, records, sealed)
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
			if errors.Is(err, writeback.ErrSuperseded) {
				return errWriteLater
			}
			gv.saveWriteBack(id, st, results, err)
			return err
		}
		st.fingerprint, st.revision = in.Fingerprint, in.SourceRevision
		for _, r := range results {
			if r.Branch != "" && r.Outcome != refluxv1.WithdrawnReason {
				st.branches = true
			}
		}
	}
	gv.opts.Metrics.observeWriteBack("", gv.now().Sub(start))
	gv.saveWriteBack(id, st, results, nil)
	return nil
}

// driftSet is what write-back is handed: the open records, sorted, and
// the closed ones that still name a branch, for the comment that closes
// its pull request.
func (gv *Governor) driftSet(snap snapshot, records, sealed []refluxv1.Drift) reverse.DriftSet {
	set := reverse.DriftSet{Kustomization: snap.gov.ref(), Spec: snap.gov.Kustomization, Policy: snap.gov.Policy,
		Revision: snap.gov.Kustomization.Status.LastAppliedRevision, Records: record.Open(records),
		SubstituteFrom: snap.gov.SubstituteFrom}
	for _, d := range sealed {
		if record.IsOpen(&d) || d.Status.Branch == "" {
			continue
		}
		if c := d.Status.Closed; c != nil && !strings.Contains(c.By, "(") {
			// The audit log batches its events, so the user behind a
			// dismissal often arrives after the close was written; the
			// comment that closes the pull request names them all the same.
			if by := gv.closedBy(&d, c); by != "" {
				d.Status.Closed = c.DeepCopy()
				d.Status.Closed.By = by
			}
		}
		set.Closed = append(set.Closed, d)
	}
	if snap.current {
		set.Render = snap.render
	}
	sort.Slice(set.Records, func(i, j int) bool { return set.Records[i].Name < set.Records[j].Name })
	return set
}

// checkBranches dismisses the records whose pushed branch a reviewer
// closed, drops them from the set, and reports the branches it retired.
// It returns how many branches await review.
func (gv *Governor) checkBranches(ctx context.Context, snap snapshot, set *reverse.DriftSet) (int, error) {
	set.Withdraw = gv.withdrawFunc(snap, set)
	bc, err := gv.opts.Writer.Check(ctx, *set)
	if err != nil {
		return 0, fmt.Errorf("checking reflux branches: %w", err)
	}
	gv.opts.Metrics.setPending(snap.gov.Key(), len(bc.Pending))
	gv.opts.Metrics.setPullRequests(snap.gov.Key(), bc)
	gv.deletedBranchEvents(snap, bc.DeletedClosed)
	gv.writeBackEvents(snap, bc.Retired)
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
		if err := gv.onBranch(ctx, snap, d, ev); err != nil {
			return 0, err
		}
	}
	set.Records = kept
	return len(bc.Pending), nil
}

// write writes the set, recording the intent before each push, taking
// records off a branch before it is closed, and the outcome after.
func (gv *Governor) write(ctx context.Context, snap snapshot, set *reverse.DriftSet) ([]reverse.BranchResult, error) {
	set.Fingerprint = reverse.Fingerprint(set.Records)
	set.Intent = gv.intentFunc(snap, set)
	set.Withdraw = gv.withdrawFunc(snap, set)
	results, err := gv.opts.Writer.Write(ctx, *set)
	if err == nil && len(results) == 0 {
		// Nothing left to write: say so, rather than keep reporting the
		// last branch as if it still carried open drift.
		results = []reverse.BranchResult{{Outcome: refluxv1.UpToDateReason, Reason: "no open drift to write back"}}
	}
	errs := []error{err}
	for _, r := range results {
		gv.opts.Metrics.observeWriteBack(r.Outcome, 0)
		errs = append(errs, gv.applyResult(ctx, snap, set, r))
	}
	if err == nil {
		errs = append(errs, gv.withdrawUnwritten(ctx, snap, set, results))
	}
	gv.writeBackEvents(snap, results)
	if err := errors.Join(errs...); err != nil {
		return results, fmt.Errorf("writing drift set %s: %w", set.Fingerprint, err)
	}
	return results, nil
}

// applyResult records one branch's outcome on its records.
func (gv *Governor) applyResult(ctx context.Context, snap snapshot, set *reverse.DriftSet, r reverse.BranchResult) error {
	byName := recordsByName(set.Records)
	var errs []error
	for name, why := range r.NotWritten {
		ev := decide.Branch{Event: decide.NotWritten, Reason: refluxv1.RefusedReason, Message: why, Now: gv.now()}
		errs = append(errs, gv.onBranch(ctx, snap, byName[name], ev))
	}
	ev := decide.Branch{Branch: r.Branch, Commit: r.Commit, Fingerprint: r.Fingerprint, PullRequest: r.PullRequest, Now: gv.now()}
	switch {
	// A pull request the forge failed to open leaves the branch pushed.
	case r.Branch != "" && r.Commit != "" && (r.Outcome == refluxv1.BranchPushedReason || r.Outcome == refluxv1.UpToDateReason ||
		r.Outcome == refluxv1.PullRequestFailedReason):
		ev.Event = decide.Pushed
	case r.Outcome == refluxv1.GitErrorReason || r.Outcome == string(writeback.Superseded):
		ev.Event = decide.Abandoned
	default:
		return errors.Join(errs...)
	}
	for _, name := range r.Records {
		errs = append(errs, gv.onBranch(ctx, snap, byName[name], ev))
	}
	return errors.Join(errs...)
}

// withdrawUnwritten takes off its branch every open record no branch
// carries now: its fields left every kind's group (now Ignore, or a
// hotfix), so the branch it names was rebuilt without it.
func (gv *Governor) withdrawUnwritten(ctx context.Context, snap snapshot, set *reverse.DriftSet, results []reverse.BranchResult) error {
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
			Message: "no field of the record is bound for Git any more", Now: gv.now()}
		errs = append(errs, gv.onBranch(ctx, snap, d, ev))
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
func (gv *Governor) onBranch(ctx context.Context, snap snapshot, d refluxv1.Drift, ev decide.Branch) error {
	if d.Name == "" {
		return nil
	}
	if ev.Now.IsZero() {
		ev.Now = gv.now()
	}
	obj := d.Spec.Object
	p := plan{name: d.Name, namespace: d.Namespace, obj: obj, ks: snap.gov.Kustomization, as: snap.gov.Identity}
	gvk := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind)
	return gv.exec.withRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		live, ok := gv.opts.Live.Get(gvk, obj.Namespace, obj.Name)
		return decide.OnBranch(rec, ev, ok && held(live, d.Name)), nil
	})
}
