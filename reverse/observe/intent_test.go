package observe

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// TestObserveAuditIntent: a drift whose audited writer is in the policy's
// fromUsers or fromGroups is a manual hotfix naming that user and groups,
// and asks for the annotation when the object lacks it.
func TestObserveAuditIntent(t *testing.T) {
	_, objs := podinfo(t)
	want := objs["ConfigMap"]
	at := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	c, err := classify.New(&refluxv1.ReverseSyncPolicySpec{ManualHotfix: refluxv1.ManualHotfix{
		Key: "ops.source", Value: "manual", FromGroups: []string{"oncall-breakglass"}, FromUsers: []string{"root@example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	res := drift.Result{Fields: []drift.Field{{
		Pointer: "/data/FEATURE_DARK_MODE", GitPointer: "/data/FEATURE_DARK_MODE", ChangeType: refluxv1.ChangeAdd,
		LiveValue: `"true"`, FluxReverts: true,
		Modifier: &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", Time: &at},
	}}}
	tests := []struct {
		name      string
		who       Who
		annotated bool
		hotfix    bool
		by        *refluxv1.HotfixIntent
		mark      map[string]string
	}{
		{name: "a break-glass group member: a hotfix, marked",
			who:    Who{User: "alice@example.com", Groups: []string{"system:authenticated", "oncall-breakglass"}},
			hotfix: true,
			by: &refluxv1.HotfixIntent{User: "alice@example.com", Groups: []string{"system:authenticated", "oncall-breakglass"},
				Matched: "group:oncall-breakglass", Manager: "kubectl-edit"},
			mark: map[string]string{"ops.source": "manual"}},
		{name: "a listed user: a hotfix, marked", who: Who{User: "root@example.com"}, hotfix: true,
			by:   &refluxv1.HotfixIntent{User: "root@example.com", Matched: "user:root@example.com", Manager: "kubectl-edit"},
			mark: map[string]string{"ops.source": "manual"}},
		{name: "already annotated: named, nothing to mark", who: Who{User: "root@example.com"}, annotated: true, hotfix: true,
			by: &refluxv1.HotfixIntent{User: "root@example.com", Matched: "user:root@example.com", Manager: "kubectl-edit"}},
		{name: "someone else: ordinary drift", who: Who{User: "bob@example.com", Groups: []string{"developers"}}},
		{name: "the audit event has not arrived: ordinary drift, for now", who: Who{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			live := want.DeepCopy()
			if tt.annotated {
				live.SetAnnotations(map[string]string{"ops.source": "manual"})
			}
			got := Observe(Input{Live: live, Desired: want, Result: res, Classifier: c, Now: at.Add(time.Second),
				Attribute: func(string, time.Time) Who { return tt.who }})
			obs := got.Observation
			g.Expect(obs.ManualHotfix).To(Equal(tt.hotfix))
			g.Expect(obs.HotfixBy).To(Equal(tt.by))
			g.Expect(obs.Mark).To(Equal(tt.mark))
			if tt.hotfix {
				g.Expect(got.Hold).To(BeTrue(), "a hotfix is held")
				g.Expect(obs.Fields[0].Action).To(Equal(refluxv1.IgnoreAction), "and never written")
			} else {
				g.Expect(obs.Fields[0].Action).NotTo(Equal(refluxv1.IgnoreAction))
			}
		})
	}
}
