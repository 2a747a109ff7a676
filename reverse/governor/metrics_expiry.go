package governor

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/prometheus/client_golang/prometheus"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// newHoldExpired is reflux_hold_expired. Its labels are those of the drift
// gauges (namespace, Kustomization, team, kind) plus what onExpiry did, so
// its cardinality is bounded the same way: no object names.
func newHoldExpired() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "reflux_hold_expired",
		Help: "Drift records whose hold reached its maximum age (manualHotfix.maxAge or a rule's holdFor), " +
			"by what onExpiry did: Alert (still held, awaiting a person) or Release (released; counted until the record is reopened or deleted).",
	}, []string{"namespace", "kustomization", "team", "kind", "on_expiry"})
}

// ReportExpired replaces a Kustomization's reflux_hold_expired series with
// the counts of its records, open and closed: a hold released on expiry
// closes its record, and stays counted while the record exists, so that
// an alert on the gauge sees it.
func (m *Metrics) ReportExpired(ks *kustomizev1.Kustomization, records []refluxv1.Drift) {
	if m == nil {
		return
	}
	m.HoldExpired.DeletePartialMatch(prometheus.Labels{"namespace": ks.Namespace, "kustomization": ks.Name})
	team := m.team(ks)
	for g, n := range expiredOf(records) {
		m.HoldExpired.WithLabelValues(ks.Namespace, ks.Name, team, g[0], g[1]).Set(float64(n))
	}
}
