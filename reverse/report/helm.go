package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/tenancy"
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
	// ArtifactErr is why helm-controller has no chart artifact to
	// upgrade from, if it has none (helmlive.Stopped).
	ArtifactErr error
	// ValuesErr is why helm-controller cannot compose the HelmRelease's
	// values, if it cannot (helmlive.Stopped).
	ValuesErr error
	// Denied are the release's objects, as Kind/namespace/name, that the
	// HelmRelease's ServiceAccount may not dry-run or hold, and the
	// permission it lacks.
	Denied map[string]*tenancy.ForbiddenError
	// Open are the open records of the release's objects.
	Open []refluxv1.Drift
	// Ungoverned is why the remote cluster the HelmRelease installs into
	// (spec.kubeConfig) cannot be governed at all: a kubeConfig reflux
	// cannot follow, or a reflux run without remote clusters.
	Ungoverned error
	// Unreachable is why that remote cluster does not answer, or its
	// kubeconfig cannot be read or used.
	Unreachable error
}

// HelmDrifted computes a HelmRelease's ReverseDrifted condition; nil
// while helm-controller has made no release to compare with.
//
// A chart that does not render here costs the records their values
// keys, not their hold, so the condition stays True for open drift and
// names the chart's failure as its reason: that is what a user must fix
// for write-back to propose anything. Values or a chart artifact that
// helm-controller cannot use cost neither: the changes are compared with
// the release it last made, whose chart and values Helm's storage keeps.
// But nothing upgrades, so a merged proposal takes no effect and no
// record resolves until they are fixed: they are named the same way
// (issue 19's bad input).
func HelmDrifted(in HelmDriftedInput) *metav1.Condition {
	switch {
	case in.Ungoverned != nil:
		// Its objects and its storage are in the other cluster: nothing
		// here says what changed there, and silence would read as clean.
		return conditions.UnknownCondition(refluxv1.ReverseDriftedCondition, refluxv1.RemoteClusterReason,
			"%s: live changes of its objects are not seen", in.Ungoverned)
	case in.Unreachable != nil:
		// Said over the records: nothing reflux knows of the cluster is
		// current while it does not answer.
		return conditions.UnknownCondition(refluxv1.ReverseDriftedCondition, refluxv1.ClusterUnreachableReason, "%s", in.Unreachable)
	case in.ReleaseErr != nil:
		return conditions.UnknownCondition(refluxv1.ReverseDriftedCondition, refluxv1.ReleaseUnreadableReason,
			"reading release %s: %s; live changes of its objects are kept and compared once it can be read", in.Release, in.ReleaseErr)
	case in.Release == "":
		return nil
	case len(in.Denied) > 0:
		// Neither evaluated nor held: helm-controller's drift correction
		// or the next upgrade erases the change. That is the first thing
		// to fix, so it is the reason, whatever else holds; True only
		// while other records of the release are open.
		objs := slices.Sorted(maps.Keys(in.Denied))
		more := ""
		if n := len(objs) - 1; n > 0 {
			more = fmt.Sprintf(", and %d more object(s)", n)
		}
		set := conditions.TrueCondition
		if len(in.Open) == 0 {
			set = conditions.UnknownCondition
		}
		return set(refluxv1.ReverseDriftedCondition, refluxv1.ImpersonationForbiddenReason,
			"%s (%s%s); %d live change(s) kept without a hold until the permission is granted",
			in.Denied[objs[0]], objs[0], more, len(objs))
	case len(in.Open) > 0 && in.ChartErr != nil:
		return conditions.TrueCondition(refluxv1.ReverseDriftedCondition, refluxv1.ChartRenderFailedReason,
			"%s; no values key is found for them: %s", driftMessage(in.Open), in.ChartErr)
	case len(in.Open) > 0 && in.ValuesErr != nil:
		return conditions.TrueCondition(refluxv1.ReverseDriftedCondition, refluxv1.ValuesInvalidReason,
			"%s; %s; compared with release %s, the hold stays and the changes are kept until the values are fixed",
			driftMessage(in.Open), in.ValuesErr, in.Release)
	case len(in.Open) > 0 && in.ArtifactErr != nil:
		return conditions.TrueCondition(refluxv1.ReverseDriftedCondition, refluxv1.ArtifactUnavailableReason,
			"%s; %s; compared with release %s, whose chart Helm's storage keeps, the hold stays and the changes are kept",
			driftMessage(in.Open), in.ArtifactErr, in.Release)
	case len(in.Open) > 0:
		return conditions.TrueCondition(refluxv1.ReverseDriftedCondition, refluxv1.DriftDetectedReason, "%s", driftMessage(in.Open))
	}
	return conditions.FalseCondition(refluxv1.ReverseDriftedCondition, refluxv1.NoDriftReason, "no drift from release %s", in.Release)
}

// maxSyncedParts bounds the branches a HelmRelease's ReverseSynced
// message lists: a release's records share a Kustomization's few
// branches, and a condition message is read at a glance.
const maxSyncedParts = 4

// HelmSynced computes a HelmRelease's ReverseSynced condition from the
// write-back state of the open records of its objects; nil while none of
// them has been written back, since write-back is the Kustomization's
// (its repository, its policy) and there is nothing of this release to
// say yet.
//
// The records carry their own ReverseSynced condition, set as their
// branch is pushed, withdrawn or refused; the release sums them up: False
// if any record's write-back failed (the first such record's reason),
// else True with the first outcome's reason. The message names each
// distinct outcome once, failures first.
func HelmSynced(open []refluxv1.Drift) *metav1.Condition {
	type part struct {
		status  metav1.ConditionStatus
		reason  string
		message string
	}
	var parts []part
	seen := map[string]bool{}
	for i := range open {
		c := apimeta.FindStatusCondition(open[i].Status.Conditions, refluxv1.ReverseSyncedCondition)
		if c == nil || seen[string(c.Status)+c.Reason+c.Message] {
			continue
		}
		seen[string(c.Status)+c.Reason+c.Message] = true
		parts = append(parts, part{status: c.Status, reason: c.Reason, message: c.Message})
	}
	if len(parts) == 0 {
		return nil
	}
	// False first, then by message, so the text does not move with the
	// order records are listed in.
	sort.SliceStable(parts, func(i, j int) bool {
		if (parts[i].status == metav1.ConditionFalse) != (parts[j].status == metav1.ConditionFalse) {
			return parts[i].status == metav1.ConditionFalse
		}
		return parts[i].reason+parts[i].message < parts[j].reason+parts[j].message
	})
	var msgs []string
	for i, p := range parts {
		if i == maxSyncedParts {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(parts)-i))
			break
		}
		msgs = append(msgs, p.reason+": "+p.message)
	}
	status := metav1.ConditionTrue
	if parts[0].status == metav1.ConditionFalse {
		status = metav1.ConditionFalse
	}
	return &metav1.Condition{Type: refluxv1.ReverseSyncedCondition, Status: status, Reason: parts[0].reason,
		Message: strings.Join(msgs, "; ")}
}
