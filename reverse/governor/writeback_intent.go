package governor

import (
	"context"
	"fmt"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/writeback"
)

// intentFunc records, before a push, the branch on the records it
// carries. A record that closed since the set was read is never pushed:
// the intent answers ErrSuperseded and the new set is written at once, so
// a change reverted by hand a moment after it was made never reaches a
// branch (issue 17 §2). The records are read from the apiserver, since
// the cache may not show a close made a moment ago.
func (gv *Governor) intentFunc(snap snapshot, set *reverse.DriftSet) reverse.IntentFunc {
	byName := recordsByName(set.Records)
	ns := set.Kustomization.Namespace
	return func(ctx context.Context, branch, fingerprint string, records []string) error {
		for _, name := range records {
			fresh, err := readRecord(ctx, gv.opts.APIReader, ns, name)
			if err != nil {
				return err
			}
			if fresh == nil || !record.IsOpen(fresh) || !fresh.DeletionTimestamp.IsZero() {
				return fmt.Errorf("%w: drift record %s/%s closed while its branch was written", writeback.ErrSuperseded, ns, name)
			}
		}
		for _, name := range records {
			ev := decide.Branch{Event: decide.Intended, Branch: branch, Fingerprint: fingerprint}
			if err := gv.onBranch(ctx, snap, byName[name], ev); err != nil {
				return err
			}
		}
		return nil
	}
}

// withdrawFunc takes records off a branch reflux is about to close and
// delete: once deleted, a branch an open record still named would read as
// a reviewer's rejection at the next check.
func (gv *Governor) withdrawFunc(snap snapshot, set *reverse.DriftSet) reverse.IntentFunc {
	byName := recordsByName(set.Records)
	return func(ctx context.Context, branch, _ string, records []string) error {
		for _, name := range records {
			ev := decide.Branch{Event: decide.Withdrawn, Branch: branch, Reason: refluxv1.WithdrawnReason,
				Message: "reflux closed branch " + branch + ": it proposed nothing open that the source branch does not already have"}
			if err := gv.onBranch(ctx, snap, byName[name], ev); err != nil {
				return err
			}
		}
		return nil
	}
}
