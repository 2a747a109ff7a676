package scheduler

import (
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// TestDriftSetNamesADismissalNotYetWritten: a record asked to be
// dismissed has left the branch before its dismissal is written; the set
// write-back is handed carries it as dismissed, by whoever annotated it,
// so the comment that closes the pull request names it too.
func TestDriftSetNamesADismissalNotYetWritten(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	s := &Scheduler{opts: Options{Now: func() time.Time { return now },
		ClosedBy: func(rec *refluxv1.Drift, c *refluxv1.DriftClosure) string {
			if c.Reason != refluxv1.ClosedDismissedReason {
				return ""
			}
			return "kubectl-annotate"
		}}}
	const branch = "reflux/ns-app/needs-decision-abc"
	rec := func(name string, state refluxv1.DriftState, dismiss bool) refluxv1.Drift {
		d := refluxv1.Drift{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		d.Status.State, d.Status.Branch = state, branch
		if dismiss {
			d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
		}
		return d
	}
	snap := reverse.Snapshot{Gov: &reverse.Governed{Kustomization: &kustomizev1.Kustomization{}}}
	set := s.driftSet(snap, nil, []refluxv1.Drift{
		rec("open", refluxv1.DriftHeld, false),
		rec("asked", refluxv1.DriftHeld, true),
	})
	g.Expect(set.Closed).To(HaveLen(1))
	got := set.Closed[0]
	g.Expect(got.Name).To(Equal("asked"))
	g.Expect(got.Status.State).To(Equal(refluxv1.DriftDismissed))
	g.Expect(got.Status.Closed).NotTo(BeNil())
	g.Expect(got.Status.Closed.Reason).To(Equal(refluxv1.ClosedDismissedReason))
	g.Expect(got.Status.Closed.By).To(Equal("kubectl-annotate"))
	g.Expect(got.Status.Closed.Time.Time).To(Equal(now))
}
