package decide

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/reverse/record"
)

// BranchEvent is what write-back did, or found, for a record's branch.
type BranchEvent string

const (
	// Intended is the write intent, recorded before the push: the branch
	// reflux is about to push and the fingerprint of the set it carries.
	Intended BranchEvent = "Intended"
	// Pushed means the branch holds the record's change at Commit (pushed
	// now, or found up to date).
	Pushed BranchEvent = "Pushed"
	// Abandoned means the intended push certainly did not happen.
	Abandoned BranchEvent = "Abandoned"
	// Closed means a branch reflux pushed is gone without being merged: a
	// reviewer rejected it.
	Closed BranchEvent = "Closed"
)

// Branch is one write-back transition of a record.
type Branch struct {
	Event       BranchEvent
	Branch      string
	Commit      string
	Fingerprint string
	// PullRequest is the URL of the branch's pull request, when one was
	// opened.
	PullRequest string
}

// OnBranch decides what a write-back transition does to a record. heldByUs
// says whether the live object carries the record's hold.
func OnBranch(rec *refluxv1.Drift, t Branch, heldByUs bool) Decision {
	if rec == nil || !record.IsOpen(rec) || !rec.DeletionTimestamp.IsZero() {
		// Closed meanwhile (resolved, dismissed, deleted): a late
		// write-back result must not reopen it.
		return Decision{Why: "the record is closed"}
	}
	next := rec.DeepCopy()
	s := &next.Status
	switch t.Event {
	case Intended:
		if s.Branch != t.Branch {
			s.Commit, s.PullRequest = "", ""
		}
		s.Branch, s.BranchFingerprint = t.Branch, t.Fingerprint
	case Pushed:
		s.State = refluxv1.DriftProposed
		s.Branch, s.Commit, s.BranchFingerprint = t.Branch, t.Commit, t.Fingerprint
		if t.PullRequest != "" {
			s.PullRequest = t.PullRequest
		}
	case Abandoned:
		if s.Branch != t.Branch || s.Commit != "" {
			return Decision{Why: "an earlier push of the branch stands"}
		}
		s.Branch, s.BranchFingerprint = "", ""
	case Closed:
		if s.Branch != t.Branch || s.Commit == "" {
			return Decision{Why: "reflux never pushed that branch for this record"}
		}
		return withRelease(Decision{Action: Dismiss, Record: rec, RequestReconcile: true,
			Why: "branch " + t.Branch + " was deleted without being merged"}, heldByUs || rec.Status.HeldSince != nil)
	default:
		return Decision{Why: "unknown branch event " + string(t.Event)}
	}
	if equality.Semantic.DeepEqual(*s, rec.Status) {
		return Decision{Why: "already recorded"}
	}
	return Decision{Action: SetStatus, Record: next, WriteStatus: true, Why: string(t.Event) + " " + t.Branch}
}

// BranchPushed reports whether reflux pushed the record's branch: a branch
// recorded only as an intent may never have reached the remote.
func BranchPushed(rec *refluxv1.Drift) bool {
	return rec.Status.Branch != "" && rec.Status.Commit != ""
}

// Declares reports whether want, the applied revision's rendered object,
// holds every value the record's fields saw live: the drift was merged
// into Git. A nil want (the object left the render) declares it too.
func Declares(want *unstructured.Unstructured, fields []refluxv1.DriftField) bool {
	if want == nil {
		return true
	}
	for _, f := range fields {
		got, found := jsonptr.Get(want.Object, f.Pointer)
		switch f.ChangeType {
		case refluxv1.ChangeRemove:
			if found {
				return false
			}
		default:
			if !found || !jsonptr.Matches(got, f.LiveValue) {
				return false
			}
		}
	}
	return true
}
