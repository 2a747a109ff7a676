package helmlive

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func withReady(status metav1.ConditionStatus, reason, message string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	hr.Namespace, hr.Name = "apps", "web"
	hr.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: message}}
	return hr
}

// TestStoppedBy: helm-controller's Ready reasons for a chart artifact or
// values it cannot use are told apart, with its message; any other Ready
// is no stop of reflux's to name.
func TestStoppedBy(t *testing.T) {
	const chartGone = "HelmChart 'apps/apps-web' is not ready: chart pull error: no such file"
	const badYAML = "unable to read values from key 'values.yaml' in ConfigMap 'apps/app-values': error converting YAML to JSON"
	tests := []struct {
		name             string
		hr               *helmv2.HelmRelease
		artifact, values string
	}{
		{name: "no Ready yet", hr: &helmv2.HelmRelease{}},
		{name: "ready", hr: withReady(metav1.ConditionTrue, helmv2.UpgradeSucceededReason, "upgraded")},
		{name: "reconciling", hr: withReady(metav1.ConditionUnknown, meta.ProgressingReason, "reconciliation in progress")},
		{name: "the chart left the source", hr: withReady(metav1.ConditionFalse, "SourceNotReady", chartGone),
			artifact: "helm-controller has no chart artifact to upgrade from (SourceNotReady: " + chartGone + ")"},
		{name: "the artifact cannot be fetched", hr: withReady(metav1.ConditionFalse, helmv2.ArtifactFailedReason, "Could not load chart: 404"),
			artifact: "helm-controller has no chart artifact to upgrade from (ArtifactFailed: Could not load chart: 404)"},
		{name: "values that do not parse", hr: withReady(metav1.ConditionFalse, "ValuesError", badYAML),
			values: "helm-controller cannot compose the values (ValuesError: " + badYAML + ")"},
		{name: "an upgrade that failed is not bad input", hr: withReady(metav1.ConditionFalse, helmv2.UpgradeFailedReason, "timed out")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := StoppedBy(tt.hr)
			errText := func(err error) string {
				if err == nil {
					return ""
				}
				return err.Error()
			}
			g.Expect(errText(got.Artifact)).To(Equal(tt.artifact))
			g.Expect(errText(got.Values)).To(Equal(tt.values))
		})
	}
}

// TestReleasedKeepsWhatStopsAnUpgrade: the HelmRelease read says, in its
// Health, what stops helm-controller upgrading it, and the condition
// hears of each change of it once; a fix clears it.
func TestReleasedKeepsWhatStopsAnUpgrade(t *testing.T) {
	g := NewWithT(t)
	gv := &Governor{release: map[types.NamespacedName]string{}, health: map[types.NamespacedName]Health{}}
	id := types.NamespacedName{Namespace: "apps", Name: "web"}
	var heard int
	gv.OnHealth(func(types.NamespacedName) { heard++ })

	hr := withReady(metav1.ConditionFalse, "ValuesError", "bad YAML")
	gv.Released(id, hr)
	g.Expect(gv.Health(id).Stopped.Values).To(MatchError(ContainSubstring("ValuesError: bad YAML")))
	g.Expect(gv.Health(id).Stopped.Artifact).NotTo(HaveOccurred())
	gv.Released(id, hr)
	g.Expect(heard).To(Equal(1), "said once")

	gv.Released(id, withReady(metav1.ConditionFalse, "SourceNotReady", "no chart"))
	g.Expect(gv.Health(id).Stopped.Values).NotTo(HaveOccurred())
	g.Expect(gv.Health(id).Stopped.Artifact).To(MatchError(ContainSubstring("SourceNotReady: no chart")))
	g.Expect(heard).To(Equal(2))

	gv.Released(id, withReady(metav1.ConditionTrue, helmv2.UpgradeSucceededReason, "upgraded"))
	g.Expect(gv.Health(id).Stopped).To(Equal(Stopped{}), "fixed")
	g.Expect(heard).To(Equal(3))
}
