package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/report"
)

// TestPolicyReportIsBounded: however many records are open, the policy's
// status lists the most severe 50 and counts the rest.
func TestPolicyReportIsBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	p := validPolicy(ns, "bounded")
	g.Expect(k8sClient.Create(ctx, p)).To(Succeed())

	now := metav1.NewTime(time.Now())
	for i := 0; i < report.MaxPolicyEntries+5; i++ {
		sev := refluxv1.SeverityLow
		if i == 42 {
			sev = refluxv1.SeverityCritical
		}
		d := &refluxv1.Drift{}
		d.Name, d.Namespace = fmt.Sprintf("configmap-flags-%02d", i), ns
		d.Spec = refluxv1.DriftSpec{
			Kustomization: refluxv1.KustomizationRef{Namespace: ns, Name: "apps"}, Policy: "bounded",
			Object:    refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: fmt.Sprintf("flags-%02d", i)},
			FirstSeen: now, LastSeen: now,
			Fields: []refluxv1.DriftField{{Pointer: "/data/X", ChangeType: refluxv1.ChangeAdd, LiveValue: `"1"`,
				Action: refluxv1.MergeAction, Severity: sev}},
		}
		g.Expect(k8sClient.Create(ctx, d)).To(Succeed())
	}
	obj := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() int32 {
		_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(p), obj)
		return obj.Status.DriftedObjects
	}, timeout, 100*time.Millisecond).Should(Equal(int32(report.MaxPolicyEntries + 5)))
	g.Expect(obj.Status.Drift.Entries).To(HaveLen(report.MaxPolicyEntries))
	g.Expect(obj.Status.Drift.Overflow).To(Equal(int32(5)))
	g.Expect(obj.Status.Drift.Entries[0].Record).To(Equal("configmap-flags-42"), "most severe first")
	g.Expect(obj.Status.Drift.BySeverity).To(HaveKeyWithValue(refluxv1.SeverityLow, int32(report.MaxPolicyEntries+4)))
	g.Expect(obj.Status.Drift.Entries[1].State).To(Equal(refluxv1.DriftDetected), "a record without status yet counts as Detected")
}
