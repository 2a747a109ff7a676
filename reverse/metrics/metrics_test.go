package metrics

import (
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestTeamOf(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		labels map[string]string
		want   string
	}{
		{"no --team-label: empty, whatever the labels", "", map[string]string{"team": "payments"}, ""},
		{"label present", "team", map[string]string{"team": "payments", "app": "shop"}, "payments"},
		{"prefixed key", "example.com/owner", map[string]string{"example.com/owner": "platform"}, "platform"},
		{"label absent: empty", "team", map[string]string{"app": "shop"}, ""},
		{"no labels: empty", "team", nil, ""},
		{"empty value: empty", "team", map[string]string{"team": ""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(TeamOf(tt.key, tt.labels)).To(Equal(tt.want))
		})
	}
}

func TestNewMetricsRefusesABadTeamLabel(t *testing.T) {
	g := NewWithT(t)
	_, err := New(WithTeamLabel("not a key!"))
	g.Expect(err).To(MatchError(ContainSubstring(`team label "not a key!" is not a label key`)))
	_, err = New(WithTeamLabel("example.com/team"))
	g.Expect(err).NotTo(HaveOccurred())
}

// TestReportLabelsByTeam shows the drift gauges carry the Kustomization's
// team, and that relabelling the team moves the series instead of leaving
// the old team's behind.
func TestReportLabelsByTeam(t *testing.T) {
	g := NewWithT(t)
	m, err := New(WithTeamLabel("team"))
	g.Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{}
	ks.Namespace, ks.Name, ks.Labels = "flux-system", "shop", map[string]string{"team": "payments"}
	since := metav1.NewTime(time.Unix(1000, 0))
	rec := refluxv1.Drift{}
	rec.Spec.Object.Kind = "ConfigMap"
	rec.Spec.FirstSeen = since
	rec.Spec.Fields = []refluxv1.DriftField{
		{Pointer: "/data/A", Severity: refluxv1.SeverityLow, Action: refluxv1.MergeAction},
		{Pointer: "/data/B", Severity: refluxv1.SeverityLow, Action: refluxv1.MergeAction},
	}
	rec.Status.HeldSince = &since

	m.Report(ks, []refluxv1.Drift{rec})
	g.Expect(testutil.ToFloat64(m.Fields.WithLabelValues("flux-system", "shop", "payments", "ConfigMap", "low", "Merge"))).To(Equal(2.0))
	g.Expect(testutil.ToFloat64(m.FirstSeen.WithLabelValues("flux-system", "shop", "payments", "ConfigMap", "low", "Merge"))).To(Equal(1000.0))
	g.Expect(testutil.ToFloat64(m.Held.WithLabelValues("flux-system", "shop", "payments"))).To(Equal(1.0))

	ks.Labels["team"] = "checkout"
	m.Report(ks, []refluxv1.Drift{rec})
	g.Expect(testutil.CollectAndCount(m.Fields)).To(Equal(1), "the payments series went")
	g.Expect(testutil.CollectAndCount(m.Held)).To(Equal(1))
	g.Expect(testutil.ToFloat64(m.Held.WithLabelValues("flux-system", "shop", "checkout"))).To(Equal(1.0))
}

func TestObserveHotfixCountsByNamespaceAndTeam(t *testing.T) {
	g := NewWithT(t)
	m, err := New(WithTeamLabel("team"))
	g.Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{}
	ks.Namespace, ks.Name, ks.Labels = "flux-system", "shop", map[string]string{"team": "payments"}
	m.ObserveHotfix("flux-system", ks)
	m.ObserveHotfix("flux-system", ks)
	m.ObserveHotfix("apps", nil) // not governed: no team
	g.Expect(testutil.ToFloat64(m.Hotfixes.WithLabelValues("flux-system", "payments"))).To(Equal(2.0))
	g.Expect(testutil.ToFloat64(m.Hotfixes.WithLabelValues("apps", ""))).To(Equal(1.0))

	var none *Metrics
	none.ObserveHotfix("apps", nil) // a nil *Metrics records nothing, and does not panic
}
