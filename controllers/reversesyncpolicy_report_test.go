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
	"github.com/reflux-dev/reflux/reverse/record"
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

// TestPolicyReportListsPendingRecords: a record written before a render
// says which fields drift has no fields and so no severity; the policy's
// report still lists it (the apiserver once refused the whole status for
// its empty severity, so no report was written while any record waited
// on a render).
func TestPolicyReportListsPendingRecords(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	p := validPolicy(ns, "pending")
	g.Expect(k8sClient.Create(ctx, p)).To(Succeed())

	now := metav1.NewTime(time.Now())
	d := &refluxv1.Drift{}
	d.Name, d.Namespace = "configmap-flags-pending", ns
	d.Spec = refluxv1.DriftSpec{
		Kustomization: refluxv1.KustomizationRef{Namespace: ns, Name: "apps"}, Policy: "pending",
		Object:    refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "flags"},
		FirstSeen: now, LastSeen: now,
		Written: []refluxv1.WrittenField{{Pointer: "/data/X", LiveValue: `"1"`}},
	}
	g.Expect(k8sClient.Create(ctx, d)).To(Succeed())
	d.Status.State = refluxv1.DriftPending
	g.Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())

	obj := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() []refluxv1.DriftSummary {
		_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(p), obj)
		if obj.Status.Drift == nil {
			return nil
		}
		return obj.Status.Drift.Entries
	}, timeout, 100*time.Millisecond).Should(ConsistOf(And(
		HaveField("Record", d.Name), HaveField("State", refluxv1.DriftPending), HaveField("Severity", refluxv1.Severity("")))))
	g.Expect(obj.Status.DriftedObjects).To(Equal(int32(1)))
}

// TestRecordOfTenThousandFieldsIsAccepted (issue 22 §2): the record of a
// live change that drifted 10,000 fields fits the CRD, bounded, so the
// change is recorded rather than refused whole by the apiserver.
func TestRecordOfTenThousandFieldsIsAccepted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	now := time.Now()
	fields := make([]refluxv1.DriftField, 0, 10_000)
	for i := 0; i < 10_000; i++ {
		fields = append(fields, refluxv1.DriftField{Pointer: fmt.Sprintf("/data/k%05d", i), ChangeType: refluxv1.ChangeAdd,
			LiveValue: `"1"`, Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow})
	}
	d := record.Merge(nil, record.Observation{Kustomization: refluxv1.KustomizationRef{Namespace: ns, Name: "apps"}, Policy: "apps",
		Object: refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "flags"}, Fields: fields, Now: now})
	g.Expect(k8sClient.Create(ctx, d)).To(Succeed())
	got := &refluxv1.Drift{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), got)).To(Succeed())
	g.Expect(got.Spec.Fields).To(HaveLen(record.MaxFields))
	g.Expect(got.Spec.OmittedFields).To(Equal(int32(10_000 - record.MaxFields)))
}
