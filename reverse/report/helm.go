package report

import (
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// HelmDriftedInput is what a HelmRelease's ReverseDrifted condition is
// computed from.
type HelmDriftedInput struct {
	// Release is the latest release helm-controller made, as
	// "namespace/name.vN"; empty while it has made none.
	Release string
	// ReleaseErr is why that release cannot be read, if it cannot.
	ReleaseErr error
	// ChartErr is why its chart does not render here, if it does not.
	ChartErr error
	// Open are the open records of the release's objects.
	Open []refluxv1.Drift
}

// HelmDrifted computes a HelmRelease's ReverseDrifted condition; nil
// while helm-controller has made no release to compare with.
//
// A chart that does not render here costs the records their values
// keys, not their hold, so the condition stays True for open drift and
// names the chart's failure as its reason: that is what a user must fix
// for write-back to propose anything.
func HelmDrifted(in HelmDriftedInput) *metav1.Condition {
	switch {
	case in.ReleaseErr != nil:
		return conditions.UnknownCondition(refluxv1.ReverseDriftedCondition, refluxv1.ReleaseUnreadableReason,
			"reading release %s: %s; live changes of its objects are kept and compared once it can be read", in.Release, in.ReleaseErr)
	case in.Release == "":
		return nil
	case len(in.Open) > 0 && in.ChartErr != nil:
		return conditions.TrueCondition(refluxv1.ReverseDriftedCondition, refluxv1.ChartRenderFailedReason,
			"%s; no values key is found for them: %s", driftMessage(in.Open), in.ChartErr)
	case len(in.Open) > 0:
		return conditions.TrueCondition(refluxv1.ReverseDriftedCondition, refluxv1.DriftDetectedReason, "%s", driftMessage(in.Open))
	}
	return conditions.FalseCondition(refluxv1.ReverseDriftedCondition, refluxv1.NoDriftReason, "no drift from release %s", in.Release)
}
