package report

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func drift(name, policy string, state refluxv1.DriftState, fields ...refluxv1.DriftField) refluxv1.Drift {
	d := refluxv1.Drift{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}}
	d.Spec = refluxv1.DriftSpec{Policy: policy, Kustomization: refluxv1.KustomizationRef{Namespace: "apps", Name: "shop"},
		Object: refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: name}, Fields: fields}
	d.Status.State = state
	return d
}

func field(s refluxv1.Severity, a refluxv1.Action) refluxv1.DriftField {
	return refluxv1.DriftField{Pointer: "/data/X", ChangeType: refluxv1.ChangeUpdate, Severity: s, Action: a}
}

// TestPolicy: only the policy's open records count, most severe first,
// with the branches they await review on.
func TestPolicy(t *testing.T) {
	g := NewWithT(t)
	now := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	proposed := drift("b-proposed", "p", refluxv1.DriftProposed, field(refluxv1.SeverityHigh, refluxv1.MergeAction))
	proposed.Status.Branch, proposed.Status.Commit, proposed.Spec.LastSeen = "reflux/apps-shop/0123", "abc", now
	pushed := metav1.NewTime(now.Add(-time.Hour))
	proposed.Status.Conditions = []metav1.Condition{{Type: refluxv1.ReverseSyncedCondition, Status: metav1.ConditionTrue,
		Reason: refluxv1.BranchPushedReason, LastTransitionTime: pushed}}
	sibling := drift("c-sibling", "p", refluxv1.DriftProposed, field(refluxv1.SeverityLow, refluxv1.MergeAction))
	sibling.Status.Branch = "reflux/apps-shop/0123" // one branch, two records
	dismissing := drift("d-dismissing", "p", refluxv1.DriftDetected, field(refluxv1.SeverityCritical, refluxv1.AlertAction))
	dismissing.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
	deleting := drift("e-deleting", "p", refluxv1.DriftDetected, field(refluxv1.SeverityCritical, refluxv1.AlertAction))
	deleting.DeletionTimestamp = &now
	records := []refluxv1.Drift{
		drift("a-new", "p", "", field(refluxv1.SeverityLow, refluxv1.AlertAction), field(refluxv1.SeverityCritical, refluxv1.MergeAction)),
		proposed, sibling, dismissing, deleting,
		drift("f-resolved", "p", refluxv1.DriftResolved, field(refluxv1.SeverityCritical, refluxv1.MergeAction)),
		drift("g-other", "q", refluxv1.DriftDetected, field(refluxv1.SeverityCritical, refluxv1.MergeAction)),
	}
	got := Policy("p", records)
	g.Expect(got.DriftedObjects).To(Equal(int32(3)))
	g.Expect(got.Drift.BySeverity).To(Equal(map[refluxv1.Severity]int32{
		refluxv1.SeverityCritical: 1, refluxv1.SeverityHigh: 1, refluxv1.SeverityLow: 2}))
	g.Expect(got.Drift.ByAction).To(Equal(map[refluxv1.Action]int32{refluxv1.MergeAction: 3, refluxv1.AlertAction: 1}))
	var names []string
	for _, e := range got.Drift.Entries {
		names = append(names, e.Record)
	}
	g.Expect(names).To(Equal([]string{"a-new", "b-proposed", "c-sibling"}), "most severe first, then by name")
	g.Expect(got.Drift.Entries[0].State).To(Equal(refluxv1.DriftDetected), "a record without status yet counts as Detected")
	g.Expect(got.Drift.Entries[0].Object).To(Equal("ConfigMap/apps/a-new"))
	g.Expect(got.Drift.Overflow).To(BeZero())
	g.Expect(got.PendingBranches).To(HaveLen(1), "a branch is listed once")
	g.Expect(got.PendingBranches[0].Branch).To(Equal("reflux/apps-shop/0123"))
	g.Expect(got.PendingBranches[0].PushedAt).To(Equal(pushed), "when the push was recorded, not when the drift was last seen")
}

// TestPolicyIsBounded: however many records are open, the status lists
// the most severe MaxPolicyEntries and counts the rest.
func TestPolicyIsBounded(t *testing.T) {
	g := NewWithT(t)
	var records []refluxv1.Drift
	for i := 0; i < MaxPolicyEntries+20; i++ {
		sev := refluxv1.SeverityLow
		if i == 42 {
			sev = refluxv1.SeverityCritical
		}
		d := drift(fmt.Sprintf("configmap-flags-%02d", i), "p", refluxv1.DriftProposed, field(sev, refluxv1.MergeAction))
		d.Status.Branch = fmt.Sprintf("reflux/apps-shop/%03d", i)
		records = append(records, d)
	}
	got := Policy("p", records)
	g.Expect(got.DriftedObjects).To(Equal(int32(MaxPolicyEntries + 20)))
	g.Expect(got.Drift.Entries).To(HaveLen(MaxPolicyEntries))
	g.Expect(got.Drift.Overflow).To(Equal(int32(20)))
	g.Expect(got.Drift.Entries[0].Record).To(Equal("configmap-flags-42"))
	g.Expect(got.PendingBranches).To(HaveLen(maxPendingBranches), "pending branches are bounded too")
	g.Expect(got.PendingBranches[0].Branch).To(Equal("reflux/apps-shop/000"), "sorted by branch")
}
