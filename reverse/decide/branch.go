package decide

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// Closed means a branch reflux pushed is gone without being merged, or
	// its pull request was closed unmerged: a reviewer rejected it.
	Closed BranchEvent = "Closed"
	// Withdrawn means reflux took the record's change off Branch: the
	// branch proposes nothing any more and reflux closed it, or its change
	// is already in the source branch. The record no longer names a
	// branch, and is Held or Detected again until one carries it.
	Withdrawn BranchEvent = "Withdrawn"
	// NotWritten means write-back could write none of the record's
	// fields; Reason says why. A branch the record named no longer carries
	// it.
	NotWritten BranchEvent = "NotWritten"
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
	// PullRequestClosed says a reviewer closed PullRequest unmerged. It
	// decided the records it proposed, not one pushed onto its branch
	// after the close (issue 22 §3): that record is not recorded with it,
	// so the branch check leaves it to be written again.
	PullRequestClosed bool
	// Reason says why, for Closed (ClosedBranchDeletedReason or
	// ClosedPullRequestClosedReason), Withdrawn and NotWritten.
	Reason string
	// Message says it in a sentence.
	Message string
	// Now is the transition's time.
	Now time.Time
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
		if t.PullRequest != "" && (!t.PullRequestClosed || s.PullRequest == t.PullRequest) {
			s.PullRequest = t.PullRequest
		}
		setSynced(s, rec.Generation, metav1.ConditionTrue, refluxv1.BranchPushedReason, pushedMessage(t), t.Now)
	case Abandoned:
		if s.Branch != t.Branch || s.Commit != "" {
			return Decision{Why: "an earlier push of the branch stands"}
		}
		s.Branch, s.BranchFingerprint = "", ""
	case Closed:
		if s.Branch != t.Branch || s.Commit == "" {
			return Decision{Why: "reflux never pushed that branch for this record"}
		}
		reason := t.Reason
		if reason == "" {
			reason = refluxv1.ClosedBranchDeletedReason
		}
		return withRelease(Decision{Action: Dismiss, Record: rec, RequestReconcile: true,
			Why:    "branch " + t.Branch + " was closed without being merged",
			Closed: Closure(reason, t.Message, "", t.Now)}, heldByUs || rec.Status.HeldSince != nil)
	case Withdrawn, NotWritten:
		if t.Event == Withdrawn && s.Branch != t.Branch {
			return Decision{Why: "the record is on another branch"}
		}
		withdraw(s)
		reason := t.Reason
		if reason == "" {
			reason = refluxv1.WithdrawnReason
		}
		setSynced(s, rec.Generation, metav1.ConditionFalse, reason, t.Message, t.Now)
	default:
		return Decision{Why: "unknown branch event " + string(t.Event)}
	}
	if equality.Semantic.DeepEqual(*s, rec.Status) {
		return Decision{Why: "already recorded"}
	}
	return Decision{Action: SetStatus, Record: next, WriteStatus: true, Why: string(t.Event) + " " + t.Branch}
}

// withdraw takes a record off its branch: no branch carries its change,
// so it is not Proposed (issue 17 §4).
func withdraw(s *refluxv1.DriftStatus) {
	s.Branch, s.BranchFingerprint, s.Commit, s.PullRequest = "", "", "", ""
	if s.State == refluxv1.DriftProposed {
		s.State = refluxv1.DriftDetected
		if s.HeldSince != nil {
			s.State = refluxv1.DriftHeld
		}
	}
}

// setSynced sets the record's ReverseSynced condition. The transition
// time moves only when the status does, as apimeta keeps it.
func setSynced(s *refluxv1.DriftStatus, generation int64, status metav1.ConditionStatus, reason, message string, now time.Time) {
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: refluxv1.ReverseSyncedCondition, Status: status,
		Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)})
}

func pushedMessage(t Branch) string {
	msg := "branch " + t.Branch + " carries the change"
	if t.Commit != "" {
		msg += " at " + shortCommit(t.Commit)
	}
	if t.PullRequest != "" {
		msg += ", pull request " + t.PullRequest
	}
	return msg
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
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
