package helmflux

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
)

// chartV2 is the chart at version 0.2.0, nothing else changed.
const chartV2 = `apiVersion: v2
name: app
description: A Deployment and a ConfigMap rendered from values, for e2e/helmflux.
version: 0.2.0
`

// TestUpgradeRevertsLiveEdits: with drift detection disabled, a live edit
// lasts until the next upgrade, and an upgrade of either kind takes back
// every field the chart renders, in every object, whether or not the
// upgrade changes that object's manifest. A key the chart does not
// render survives.
func TestUpgradeRevertsLiveEdits(t *testing.T) {
	g := NewWithT(t)
	r := newRelease(t, "upgrade", helmv2.DriftDetectionDisabled)
	reverted := fields{Greeting: "hello", Color: "blue", Added: edited.Added, Replicas: 2}

	t.Run("values", func(t *testing.T) {
		g := NewWithT(t)
		liveEdit(g, r)
		r.Reconcile(g)
		g.Expect(live(g, r)).To(Equal(edited), "disabled: a forced reconcile changes nothing")
		// Only the ConfigMap's mode changes; the Deployment renders as before.
		rls := r.SetValues(g, map[string]any{"config": map[string]any{"mode": "maintenance"}}, 2)
		g.Expect(rls.Action).To(Equal(helmv2.ReleaseActionUpgrade))
		g.Expect(live(g, r)).To(Equal(reverted))
		g.Expect(r.ConfigMap(g, r.Name+"-settings").Data).To(HaveKeyWithValue("mode", "maintenance"))
	})
	t.Run("chart-version", func(t *testing.T) {
		g := NewWithT(t)
		liveEdit(g, r)
		r.Push(g, map[string]string{"charts/app/Chart.yaml": chartV2})
		rls := r.WaitRelease(g, 3)
		g.Expect(rls.ChartVersion).To(Equal("0.2.0"))
		g.Expect(live(g, r)).To(Equal(reverted))
	})
	g.Expect(managers(r.ConfigMap(g, r.Name+"-settings"))).To(ConsistOf("helm-controller/Apply", "kubectl-edit/Update"),
		"the upgrade is a forced server-side apply: alice keeps only the key she added")
}
