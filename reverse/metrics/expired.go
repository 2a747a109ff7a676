package metrics

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

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

// expiredOf counts a Kustomization's records whose hold expired, by the
// labels of reflux_hold_expired.
func expiredOf(records []refluxv1.Drift) map[[2]string]int {
	out := map[[2]string]int{}
	for i := range records {
		d := &records[i]
		mode, ok := expiredMode(d)
		if ok {
			out[[2]string{d.Spec.Object.Kind, mode}]++
		}
	}
	return out
}

// expiredMode is what was done with a record's expired hold: Alert (kept,
// still open) or Release (released, the record closed as Expired).
func expiredMode(d *refluxv1.Drift) (string, bool) {
	if !d.DeletionTimestamp.IsZero() {
		return "", false
	}
	switch {
	case d.Status.State == refluxv1.DriftExpired:
		return string(refluxv1.ExpiryRelease), true
	case d.Status.HoldExpiresAt != nil && d.Status.HeldSince != nil &&
		apimeta.IsStatusConditionTrue(d.Status.Conditions, refluxv1.HoldExpiredCondition):
		return string(refluxv1.ExpiryAlert), true
	}
	return "", false
}
