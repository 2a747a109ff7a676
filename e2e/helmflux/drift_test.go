package helmflux

import (
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// noDrift is the Drifted condition of a release helm-controller found in
// sync with its manifest.
const noDrift = "False/NoDriftDetected: No drift detected against the cluster state"

// driftedConflict is how helm-controller v1.6.2 fails every reconcile
// that corrects drift: Drifted goes True and back to False within it, and
// its final status patch takes the change for another writer's. The
// retry that follows finds no drift and sets Ready.
const driftedConflict = `error patching conditions: The condition "Drifted" was modified by a different process ` +
	`and this caused a merge/ChangeCondition conflict`

// TestLiveEditByDriftMode makes the same live edit of a release in each
// spec.driftDetection.mode and forces reconciles: only enabled reverts
// it, and only the fields the chart renders; a key added to the
// ConfigMap survives every mode.
func TestLiveEditByDriftMode(t *testing.T) {
	cases := []struct {
		mode helmv2.DriftDetectionMode
		// want is what is live after each of two forced reconciles.
		want fields
		// drifted is the Drifted condition after them.
		drifted func(r *fixture.Release) string
	}{
		{mode: helmv2.DriftDetectionDisabled, want: edited,
			drifted: func(*fixture.Release) string { return "none" }},
		{mode: helmv2.DriftDetectionWarn, want: edited,
			drifted: func(r *fixture.Release) string { return "True/DriftDetected: " + driftedMessage(r) }},
		{mode: helmv2.DriftDetectionEnabled, want: fields{Greeting: "hello", Color: "blue", Added: edited.Added, Replicas: 2},
			drifted: func(*fixture.Release) string { return noDrift }},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			g := NewWithT(t)
			r := newRelease(t, "mode-"+string(tc.mode), tc.mode)
			liveEdit(g, r)
			for range 2 {
				r.Reconcile(g)
				g.Expect(live(g, r)).To(Equal(tc.want))
				g.Expect(r.Condition(g, helmv2.DriftedCondition)).To(Equal(tc.drifted(r)))
			}
			g.Expect(r.HelmRelease.Status.History.Latest().Version).To(Equal(1), "no upgrade, whatever the mode")
			switch tc.mode {
			case helmv2.DriftDetectionDisabled:
				g.Expect(r.ReconcileErrors(g)).To(BeEmpty())
			case helmv2.DriftDetectionWarn:
				g.Expect(r.Event(g, helmv2.DriftDetectedReason, "")).To(Equal(driftedMessage(r)))
				g.Expect(r.ReconcileErrors(g)).To(BeEmpty())
			case helmv2.DriftDetectionEnabled:
				g.Expect(r.ReconcileErrors(g)).To(And(Not(BeEmpty()), HaveEach(HavePrefix(driftedConflict))),
					"the reconcile that corrects fails its status patch, and only that way")
				g.Expect(r.Event(g, helmv2.DriftDetectedReason, "")).To(Equal(driftedMessage(r)))
				g.Expect(r.Event(g, "DriftCorrected", "")).To(Equal(fmt.Sprintf(
					"Cluster state of release %s has been corrected:\nConfigMap/%s/%s-settings configured\nDeployment/%s/%s configured",
					releaseName(r, 1), r.Name, r.Name, r.Name, r.Name)))
				cm := r.ConfigMap(g, r.Name+"-settings")
				g.Expect(managers(cm)).To(ConsistOf("helm-controller/Apply", "kubectl-edit/Update", "helm-controller/Update"),
					"the correction is a JSON patch by helm-controller; alice keeps the key she added")
			}
		})
	}
}

// driftedMessage is helm-controller's summary of liveEdit: two changed
// keys in the ConfigMap (the added key is not drift), one changed field
// in the Deployment.
func driftedMessage(r *fixture.Release) string {
	return fmt.Sprintf("Cluster state of release %s has drifted from the desired state:\n"+
		"ConfigMap/%s/%s-settings changed (0 additions, 2 changes, 0 removals)\n"+
		"Deployment/%s/%s changed (0 additions, 1 changes, 0 removals)",
		releaseName(r, 1), r.Name, r.Name, r.Name, r.Name)
}

// TestIgnoreRulesKeepIgnoredEdits: in enabled mode, an edit of a path an
// ignore rule names survives, with or without a target; the rest of the
// same object is reverted.
func TestIgnoreRulesKeepIgnoredEdits(t *testing.T) {
	g := NewWithT(t)
	r := newRelease(t, "ignore", helmv2.DriftDetectionEnabled,
		helmv2.IgnoreRule{Paths: []string{"/spec/replicas"}},
		helmv2.IgnoreRule{Paths: []string{"/data/greeting"}, Target: &kustomize.Selector{Kind: "ConfigMap"}})
	liveEdit(g, r)
	r.Reconcile(g)
	g.Expect(live(g, r)).To(Equal(fields{Greeting: edited.Greeting, Color: "blue", Added: edited.Added, Replicas: edited.Replicas}))
	g.Expect(r.Event(g, "DriftCorrected", "")).To(Equal(fmt.Sprintf(
		"Cluster state of release %s has been corrected:\nConfigMap/%s/%s-settings configured",
		releaseName(r, 1), r.Name, r.Name)), "the Deployment's only drift is ignored: it is not patched")
	g.Expect(r.Condition(g, helmv2.DriftedCondition)).To(Equal(noDrift))
	g.Expect(r.ReconcileErrors(g)).To(And(Not(BeEmpty()), HaveEach(HavePrefix(driftedConflict))))
}

// TestEnabledRevertsOnItsOwnInterval: no forced reconcile is needed;
// helm-controller's next periodic reconcile reverts the edit, so a
// HelmRelease's spec.interval bounds how long a live edit lasts.
func TestEnabledRevertsOnItsOwnInterval(t *testing.T) {
	g := NewWithT(t)
	r := fixture.NewRelease(t, env, "interval", fixture.ReleaseOptions{Dir: "testdata", Chart: chart, Interval: 3 * time.Second,
		HelmRelease: func(hr *helmv2.HelmRelease) {
			hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled}
		}})
	liveEdit(g, r)
	g.Eventually(func(g Gomega) fields { return live(g, r) }, 30*time.Second, fixture.Interval).
		Should(Equal(fields{Greeting: "hello", Color: "blue", Added: edited.Added, Replicas: 2}))
	r.Event(g, "DriftCorrected", releaseName(r, 1))
}
