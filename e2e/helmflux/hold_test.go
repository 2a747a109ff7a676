package helmflux

import (
	"fmt"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
)

// TestDriftDetectionDisabledHoldsUntilUpgrade: in enabled mode, an
// object whose live metadata carries helm.toolkit.fluxcd.io/
// driftDetection: disabled, as an annotation or a label written by
// another field manager (reflux, merge patch), is left out of drift
// detection and correction: its live edit survives forced reconciles
// while the release's other object is reverted. An upgrade does not read
// the key: it takes the edit back, and leaves the key, so the object is
// held again afterwards.
func TestDriftDetectionDisabledHoldsUntilUpgrade(t *testing.T) {
	for _, as := range []string{"annotations", "labels"} {
		t.Run(as, func(t *testing.T) {
			g := NewWithT(t)
			r := newRelease(t, "hold-"+as, helmv2.DriftDetectionEnabled)
			markDriftDetectionDisabled(g, r, as)
			liveEdit(g, r)
			held := fields{Greeting: edited.Greeting, Color: edited.Color, Added: edited.Added, Replicas: 2}
			for range 2 {
				r.Reconcile(g)
				g.Expect(live(g, r)).To(Equal(held), "the ConfigMap is held, the Deployment reverted")
			}
			g.Expect(r.Event(g, helmv2.DriftDetectedReason, "")).To(Equal(fmt.Sprintf(
				"Cluster state of release %s has drifted from the desired state:\n"+
					"ConfigMap/%s/%s-settings excluded\nDeployment/%s/%s changed (0 additions, 1 changes, 0 removals)",
				releaseName(r, 1), r.Name, r.Name, r.Name, r.Name)))
			g.Expect(r.Condition(g, helmv2.DriftedCondition)).To(Equal(noDrift))

			r.SetValues(g, map[string]any{"config": map[string]any{"mode": "maintenance"}}, 2)
			g.Expect(live(g, r)).To(Equal(fields{Greeting: "hello", Color: "blue", Added: edited.Added, Replicas: 2}),
				"the upgrade reverts the held object's rendered fields")
			cm := r.ConfigMap(g, r.Name+"-settings")
			meta := cm.Annotations
			if as == "labels" {
				meta = cm.Labels
			}
			g.Expect(meta).To(HaveKeyWithValue(driftDetectionKey, "disabled"), "the upgrade leaves reflux's key")

			liveEdit(g, r)
			r.Reconcile(g)
			g.Expect(live(g, r)).To(Equal(held), "held again after the upgrade")
		})
	}
}
