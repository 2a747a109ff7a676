package classify

import (
	"fmt"
	"testing"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// manyRules are n rules that each look at paths, kinds and fields, and
// match nothing a benchmark classifies: the worst case, every rule tried
// before the built-in defaults.
func manyRules(n int) []refluxv1.Rule {
	rules := make([]refluxv1.Rule, n)
	for i := range rules {
		rules[i] = refluxv1.Rule{
			Name:   fmt.Sprintf("team-%d", i),
			Paths:  []string{fmt.Sprintf("teams/t%d/*.yaml", i), fmt.Sprintf("teams/t%d/overlays/*/*.yaml", i)},
			Kinds:  []string{"ConfigMap", "Deployment"},
			Fields: []string{"/data/*", "/spec/template/spec/containers/*/env/*/value"},
			Action: refluxv1.MergeAction,
		}
	}
	return rules
}

// BenchmarkClassifyEveryRule is the cost of classifying one field under
// the largest policy the CRD admits (128 rules; issue 22 §2 asks about
// 1,000, which admission refuses by name), when no rule matches.
func BenchmarkClassifyEveryRule(b *testing.B) {
	c, err := New(&refluxv1.ReverseSyncPolicySpec{Rules: manyRules(128)})
	if err != nil {
		b.Fatal(err)
	}
	f := Field{Kind: "ConfigMap", Pointer: "/data/FEATURE_X", ChangeType: refluxv1.ChangeAdd, LiveValue: "on",
		OriginFile: "apps/checkout/flags.yaml"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d := c.Classify(f); d.Rule == "" {
			b.Fatal("no decision")
		}
	}
}
