package metrics

import (
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestReportExpired: reflux_hold_expired counts held records paged on
// expiry and records released on it, per Kustomization, team, kind and
// onExpiry, never per object; and a report replaces the old series.
func TestReportExpired(t *testing.T) {
	g := NewWithT(t)
	m, err := New(WithTeamLabel("team"))
	g.Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{}
	ks.Namespace, ks.Name, ks.Labels = "shop", "apps", map[string]string{"team": "payments"}
	t0 := metav1.NewTime(time.Unix(1000, 0))
	rec := func(name, kind string, mutate func(*refluxv1.Drift)) refluxv1.Drift {
		d := refluxv1.Drift{}
		d.Name, d.Spec.Object.Kind, d.Spec.Object.Name = name, kind, name
		d.Status.State, d.Status.HeldSince, d.Status.HoldExpiresAt = refluxv1.DriftHeld, &t0, &t0
		mutate(&d)
		return d
	}
	paged := func(d *refluxv1.Drift) {
		apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: refluxv1.HoldExpiredCondition,
			Status: metav1.ConditionTrue, Reason: refluxv1.HoldKeptReason})
	}
	records := []refluxv1.Drift{
		rec("a", "Deployment", paged),
		rec("b", "Deployment", paged),
		rec("c", "Deployment", func(d *refluxv1.Drift) { paged(d); d.Status.State, d.Status.HeldSince = refluxv1.DriftExpired, nil }),
		rec("d", "ConfigMap", func(*refluxv1.Drift) {}),                                       // held, not yet expired
		rec("e", "ConfigMap", func(d *refluxv1.Drift) { paged(d); d.Status.HeldSince = nil }), // paged, since released
		rec("f", "Deployment", func(d *refluxv1.Drift) { paged(d); d.DeletionTimestamp = &t0 }),
	}
	m.ReportExpired(ks, records)
	want := `
# HELP reflux_hold_expired Drift records whose hold reached its maximum age (manualHotfix.maxAge or a rule's holdFor), by what onExpiry did: Alert (still held, awaiting a person) or Release (released; counted until the record is reopened or deleted).
# TYPE reflux_hold_expired gauge
reflux_hold_expired{kind="Deployment",kustomization="apps",namespace="shop",on_expiry="Alert",team="payments"} 2
reflux_hold_expired{kind="Deployment",kustomization="apps",namespace="shop",on_expiry="Release",team="payments"} 1
`
	g.Expect(testutil.CollectAndCompare(m.HoldExpired, strings.NewReader(want))).To(Succeed())

	m.ReportExpired(ks, records[3:4])
	g.Expect(testutil.CollectAndCount(m.HoldExpired)).To(Equal(0), "the old series go")
}
