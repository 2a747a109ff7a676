package helmlive

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Ready reasons helm-controller (v1.6) sets when it stops before it
// has a chart and values to upgrade with. They are literals in its
// reconcile loop, not all exported by its API module, so they are named
// here.
const (
	// readyArtifactFailed: the source object or the chart's artifact
	// cannot be fetched or loaded (helmv2.ArtifactFailedReason).
	readyArtifactFailed = helmv2.ArtifactFailedReason
	// readySourceNotReady: the HelmChart (or OCIRepository) has no
	// artifact, for example because the chart left the source revision.
	readySourceNotReady = "SourceNotReady"
	// readyValuesError: spec.values and spec.valuesFrom do not compose,
	// for example a valuesFrom key whose YAML does not parse.
	readyValuesError = "ValuesError"
)

// Stopped is why helm-controller upgrades nothing of a HelmRelease, as
// its Ready condition says. reflux compares live objects with the
// release helm-controller last made, whose chart and values Helm's
// storage keeps, so neither stops detection or the hold; but the records
// cannot resolve, nor a merged proposal take effect, until it is fixed,
// so it is what the HelmRelease's ReverseDrifted names (issue 19's bad
// input).
type Stopped struct {
	// Artifact is why helm-controller has no chart artifact to upgrade
	// from; nil when it has one.
	Artifact error
	// Values is why helm-controller cannot compose the HelmRelease's
	// values; nil when it can.
	Values error
}

// StoppedBy reads hr's Ready condition for a chart artifact or values
// helm-controller cannot use. A Ready condition of an older generation
// still counts: helm-controller sets Ready on every attempt, and a spec
// change it has not reached yet has not fixed anything.
func StoppedBy(hr *helmv2.HelmRelease) Stopped {
	c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionFalse {
		return Stopped{}
	}
	switch c.Reason {
	case readyArtifactFailed, readySourceNotReady:
		return Stopped{Artifact: fmt.Errorf("helm-controller has no chart artifact to upgrade from (%s: %s)", c.Reason, c.Message)}
	case readyValuesError:
		return Stopped{Values: fmt.Errorf("helm-controller cannot compose the values (%s: %s)", c.Reason, c.Message)}
	}
	return Stopped{}
}
