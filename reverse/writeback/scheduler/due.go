package scheduler

import (
	"time"

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

// state is a Kustomization's write-back bookkeeping.
type state struct {
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
	// yieldingSince is when a due run began to wait for the live path's
	// backlog (yield.go); zero while it does not.
	yieldingSince time.Time
	last          *WriteBackStatus
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
func due(st state, in dueInput) (write, check bool) {
	write = in.Fingerprint != st.fingerprint || in.Fingerprint != "" && in.SourceRevision != st.revision
	check = (in.Branches || st.branches) &&
		(write || in.SourceRevision != st.checkedRevision || in.Now.Sub(st.checkedAt) >= in.Interval)
	return write, check
}

// dueOf computes the due input of a Kustomization's records.
func dueOf(g *reverse.Governed, records []refluxv1.Drift, now time.Time) dueInput {
	in := dueInput{SourceRevision: g.SourceRevision, Interval: g.SourceInterval, Now: now}
	if in.Interval <= 0 {
		in.Interval = g.Kustomization.Spec.Interval.Duration
	}
	var writable []refluxv1.Drift
	for _, d := range record.Evaluated(records) {
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
