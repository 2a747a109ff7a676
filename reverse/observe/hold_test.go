package observe

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
)

// TestClassifyHoldLimit: a hold is bounded by the shortest holdFor of the
// rules that hold a field Flux reverts, and a manual hotfix by the
// policy's maxAge alone.
func TestClassifyHoldLimit(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	noHold := false
	spec := &refluxv1.ReverseSyncPolicySpec{
		ManualHotfix: refluxv1.ManualHotfix{Key: "ops.source", Value: "manual", MaxAge: d(72 * time.Hour)},
		Rules: []refluxv1.Rule{
			{Name: "flags", Fields: []string{"/data/flag"}, Action: refluxv1.MergeAction, HoldFor: d(2 * time.Hour)},
			{Name: "replicas", Fields: []string{"/spec/replicas"}, Action: refluxv1.AlertAction, HoldFor: d(30 * time.Minute)},
			{Name: "forever", Fields: []string{"/data/other"}, Action: refluxv1.MergeAction},
			{Name: "unheld", Fields: []string{"/spec/paused"}, Action: refluxv1.AlertAction, Hold: &noHold, HoldFor: d(time.Minute)},
		},
	}
	c, err := classify.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := func(ptr string, reverts bool) refluxv1.DriftField {
		return refluxv1.DriftField{Pointer: ptr, ChangeType: refluxv1.ChangeUpdate, GitValue: `"a"`, LiveValue: `"b"`, FluxReverts: reverts}
	}
	tests := []struct {
		name   string
		fields []refluxv1.DriftField
		hotfix bool
		want   Hold
	}{
		{"one bounded rule", []refluxv1.DriftField{f("/data/flag", true)}, false, Hold{Hold: true, For: 2 * time.Hour}},
		{"the shortest of two bounded rules", []refluxv1.DriftField{f("/data/flag", true), f("/spec/replicas", true)}, false,
			Hold{Hold: true, For: 30 * time.Minute}},
		{"an unbounded rule does not lift a bound", []refluxv1.DriftField{f("/data/other", true), f("/data/flag", true)}, false,
			Hold{Hold: true, For: 2 * time.Hour}},
		{"no rule bounds it", []refluxv1.DriftField{f("/data/other", true)}, false, Hold{Hold: true}},
		{"a rule that does not hold does not bound", []refluxv1.DriftField{f("/spec/paused", true), f("/data/other", true)}, false,
			Hold{Hold: true}},
		{"a field Flux keeps is not held, so not bounded", []refluxv1.DriftField{f("/spec/replicas", false), f("/data/flag", true)}, false,
			Hold{Hold: true, For: 2 * time.Hour}},
		{"nothing held", []refluxv1.DriftField{f("/spec/paused", true)}, false, Hold{}},
		{"a manual hotfix is bounded by maxAge, not its rules", []refluxv1.DriftField{f("/spec/replicas", true)}, true,
			Hold{Hold: true, For: 72 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Classify(c, "Deployment", "", tt.fields, tt.hotfix)).To(Equal(tt.want))
		})
	}
	t.Run("a manual hotfix without maxAge is unbounded", func(t *testing.T) {
		c, err := classify.New(&refluxv1.ReverseSyncPolicySpec{Rules: spec.Rules})
		if err != nil {
			t.Fatal(err)
		}
		NewWithT(t).Expect(Classify(c, "Deployment", "", []refluxv1.DriftField{f("/data/flag", true)}, true)).To(Equal(Hold{Hold: true}))
	})
}
