package scheduler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/writeback"
)

// intentFunc records, before a push, the branch on the records it
// carries. A record that closed since the set was read is never pushed:
// the intent answers ErrSuperseded and the new set is written at once, so
// a change reverted by hand a moment after it was made never reaches a
// branch (issue 17 §2). The records are read from the apiserver, since
// the cache may not show a close made a moment ago.
func (s *Scheduler) intentFunc(snap reverse.Snapshot, set *reverse.DriftSet) reverse.IntentFunc {
	byName := recordsByName(set.Records)
	ns := set.Kustomization.Namespace
	return func(ctx context.Context, branch, fingerprint string, records []string) error {
		for _, name := range records {
			fresh, err := execute.ReadRecord(ctx, s.opts.APIReader, ns, name)
			if err != nil {
				return err
			}
			if fresh == nil || !record.IsOpen(fresh) || !fresh.DeletionTimestamp.IsZero() {
				return fmt.Errorf("%w: drift record %s/%s closed while its branch was written", writeback.ErrSuperseded, ns, name)
			}
		}
		for _, name := range records {
			ev := decide.Branch{Event: decide.Intended, Branch: branch, Fingerprint: fingerprint}
			if err := s.onBranch(ctx, snap, byName[name], ev); err != nil {
				return err
			}
		}
		return nil
	}
}

// withdrawFunc takes records off a branch reflux is about to close and
// delete: once deleted, a branch an open record still named would read as
// a reviewer's rejection at the next check.
func (s *Scheduler) withdrawFunc(snap reverse.Snapshot, set *reverse.DriftSet) reverse.IntentFunc {
	byName := recordsByName(set.Records)
	return func(ctx context.Context, branch, why string, records []string) error {
		if why == "" {
			why = "it proposed nothing open that the source branch does not already have"
		}
		for _, name := range records {
			ev := decide.Branch{Event: decide.Withdrawn, Branch: branch, Reason: refluxv1.WithdrawnReason,
				Message: "reflux closed branch " + branch + ": " + why}
			if err := s.onBranch(ctx, snap, byName[name], ev); err != nil {
				return err
			}
		}
		return nil
	}
}

// attributed leaves out the records whose object awaits its audited
// writer and that no branch carries yet. wait is true when one that a
// branch carries awaits it: rebuilding that branch now would push whatever
// the record says before its user is known, so the whole write waits for
// the attribution to settle (issue 11: a hotfix is never pushed because
// its user arrived late).
func (s *Scheduler) attributed(id types.NamespacedName, records []refluxv1.Drift) (kept []refluxv1.Drift, wait bool) {
	kept = records[:0:0]
	for _, d := range records {
		if !s.opts.Engine.AwaitingAttribution(id, d.Spec.Object) {
			kept = append(kept, d)
			continue
		}
		s.opts.Log.V(1).Info("write-back waits for the audit log to name the writer", "record", d.Name)
		if d.Status.Branch != "" && record.IsOpen(&d) {
			wait = true
		}
	}
	return kept, wait
}

// closedBy names who closed a record, for the comment that closes its
// pull request.
func (s *Scheduler) closedBy(rec *refluxv1.Drift, c *refluxv1.DriftClosure) string {
	if s.opts.ClosedBy == nil {
		return ""
	}
	return s.opts.ClosedBy(rec, c)
}
