package controllers

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// rulesPolicy is a valid policy with n rules, each with paths, kinds and
// fields, as a large platform team's policy would have them.
func rulesPolicy(ns, name string, n int) *refluxv1.ReverseSyncPolicy {
	p := validPolicy(ns, name)
	p.Spec.Rules = make([]refluxv1.Rule, n)
	for i := range p.Spec.Rules {
		p.Spec.Rules[i] = refluxv1.Rule{
			Name:   fmt.Sprintf("team-%d", i),
			Paths:  []string{fmt.Sprintf("teams/t%d/*.yaml", i)},
			Kinds:  []string{"ConfigMap"},
			Fields: []string{"/data/*"},
			Action: refluxv1.MergeAction,
		}
	}
	return p
}

// TestAdmissionBoundsRules (issue 22 §2): a policy of 1,000 rules is
// refused at admission, naming the limit, and one of 128, the limit, is
// admitted.
func TestAdmissionBoundsRules(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	err := k8sClient.Create(ctx, rulesPolicy(ns, "thousand", 1000))
	g.Expect(err).To(MatchError(And(ContainSubstring("spec.rules"), ContainSubstring("must have at most 128 items"))))
	g.Expect(k8sClient.Create(ctx, rulesPolicy(ns, "largest", 128))).To(Succeed())
}

// BenchmarkAdmitLargestPolicy is what creating a policy of 128 rules, the
// most the CRD admits, costs at the real apiserver: its schema and CEL
// validation, round trip included.
func BenchmarkAdmitLargestPolicy(b *testing.B) {
	ctx := context.Background()
	ns := "default"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := rulesPolicy(ns, fmt.Sprintf("largest-%d", i), 128)
		if err := k8sClient.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := k8sClient.Delete(ctx, p); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
