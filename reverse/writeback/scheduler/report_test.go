package scheduler

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// TestReverseSyncedWorstOutcome: the worst branch decides the
// Kustomization's ReverseSynced; a read-only token is named as such, and
// its branch still counts as pushed.
func TestReverseSyncedWorstOutcome(t *testing.T) {
	pushed := reverse.BranchResult{Outcome: refluxv1.BranchPushedReason, Branch: "reflux/a", Commit: "0123456789abcdef"}
	readOnly := reverse.BranchResult{Outcome: refluxv1.TokenReadOnlyReason, Branch: "reflux/b", Commit: "fedcba9876543210",
		Reason: "the token may read the repository but not write its pull requests: 403"}
	tests := []struct {
		name    string
		results []reverse.BranchResult
		status  metav1.ConditionStatus
		reason  string
	}{
		{"pushed", []reverse.BranchResult{pushed}, metav1.ConditionTrue, refluxv1.BranchPushedReason},
		{"a read-only token", []reverse.BranchResult{pushed, readOnly}, metav1.ConditionFalse, refluxv1.TokenReadOnlyReason},
		{"a git error is worse", []reverse.BranchResult{readOnly, {Outcome: refluxv1.GitErrorReason}},
			metav1.ConditionFalse, refluxv1.GitErrorReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := ReverseSynced(&WriteBackStatus{Results: tt.results})
			g.Expect(c.Status).To(Equal(tt.status))
			g.Expect(c.Reason).To(Equal(tt.reason))
		})
	}
	NewWithT(t).Expect(ReverseSynced(&WriteBackStatus{Results: []reverse.BranchResult{readOnly}}).Message).
		To(ContainSubstring("may read the repository but not write"), "the forge's answer is in the message")
	NewWithT(t).Expect(leftPushed(refluxv1.TokenReadOnlyReason)).To(BeTrue(), "the branch was pushed before the forge refused")
	NewWithT(t).Expect(leftPushed(refluxv1.GitErrorReason)).To(BeFalse())
}
