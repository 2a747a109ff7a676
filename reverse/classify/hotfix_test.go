package classify

import (
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestHotfixFrom: an audited writer declares a manual hotfix when its user
// is in fromUsers or one of its groups in fromGroups, exactly.
func TestHotfixFrom(t *testing.T) {
	c, err := New(&refluxv1.ReverseSyncPolicySpec{ManualHotfix: refluxv1.ManualHotfix{
		FromUsers:  []string{"alice@example.com"},
		FromGroups: []string{"oncall-breakglass", "sre-leads"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	none, err := New(&refluxv1.ReverseSyncPolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		c       *Classifier
		user    string
		groups  []string
		matched string
		ok      bool
	}{
		{"a listed user", c, "alice@example.com", nil, "user:alice@example.com", true},
		{"a user in a listed group", c, "bob@example.com", []string{"system:authenticated", "oncall-breakglass"}, "group:oncall-breakglass", true},
		{"the user wins over its groups", c, "alice@example.com", []string{"sre-leads"}, "user:alice@example.com", true},
		{"the first listed group of the event", c, "bob@example.com", []string{"sre-leads", "oncall-breakglass"}, "group:sre-leads", true},
		{"a user in no listed group", c, "carol@example.com", []string{"system:authenticated", "developers"}, "", false},
		{"matching is exact, not by prefix", c, "alice@example.com.evil", []string{"oncall-breakglass-2", "oncall"}, "", false},
		{"matching is case-sensitive", c, "Alice@example.com", []string{"Oncall-Breakglass"}, "", false},
		{"no user yet (the audit event has not arrived)", c, "", []string{"oncall-breakglass"}, "", false},
		{"a policy without lists declares nothing", none, "alice@example.com", []string{"oncall-breakglass"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			matched, ok := tt.c.HotfixFrom(tt.user, tt.groups)
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(matched).To(Equal(tt.matched))
		})
	}
	NewWithT(t).Expect(c.AuditIntent()).To(BeTrue())
	NewWithT(t).Expect(none.AuditIntent()).To(BeFalse())
}
