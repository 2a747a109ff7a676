package report

import (
	"errors"
	"fmt"
	"strings"
	"time"

	apiacl "github.com/fluxcd/pkg/apis/acl"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// DriftedInput is everything the Drifted condition is computed from.
type DriftedInput struct {
	// Applied is the revision Flux applied.
	Applied string
	// Render is the renderer's state for it, Engine the engine's.
	Render desired.State
	Engine governor.Status
	// Open are the open records.
	Open []refluxv1.Drift
	// WatchDenied are the live watches of the Kustomization's kinds that
	// reflux's own RBAC does not allow, each saying how to grant it.
	WatchDenied []error
	// Previous is the condition as it stands; nil when unset.
	Previous *metav1.Condition
	// SlowRender is how long a render may take before the condition says
	// so; below it the condition keeps its last word, so a short render
	// of each revision does not flap it.
	SlowRender time.Duration
	Now        time.Time
}

// Drifted computes a Kustomization's Drifted condition; nil keeps
// Previous.
func Drifted(in DriftedInput) *metav1.Condition {
	if in.Previous != nil && letGo[in.Previous.Reason] {
		// Said while reflux governed nothing of the Kustomization: kept
		// through a render, it would say so of one reflux now governs.
		in.Previous = nil
	}
	waiting := in.waiting()
	switch {
	case len(in.Engine.Denied) > 0:
		return forbiddenCondition(in.Engine.Denied)
	case len(in.WatchDenied) > 0:
		return watchForbiddenCondition(in.WatchDenied, in.Open)
	case !in.Engine.Current && in.Render.Err != nil && !in.Engine.RollingOut:
		reason := refluxv1.RenderFailedReason
		if errors.Is(in.Render.Err, desired.ErrRevisionUnavailable) {
			reason = refluxv1.ArtifactUnavailableReason
		}
		return conditions.UnknownCondition(refluxv1.DriftedCondition, reason, "rendering revision %s: %s; %s",
			in.Applied, in.Render.Err, waiting)
	case !in.Engine.Current:
		what := fmt.Sprintf("rendering revision %s", in.Applied)
		if in.Engine.RollingOut {
			what = "Flux is applying a revision reflux has not rendered"
		}
		slow := in.Render.Building && in.Now.Sub(in.Render.Since) >= in.SlowRender
		if in.Render.Building {
			what += fmt.Sprintf(" (%s so far)", in.Now.Sub(in.Render.Since).Round(time.Second))
		}
		if in.Render.Skipped > 0 {
			// Revisions come faster than a build: say that reflux goes
			// for the newest rather than rendering each in turn.
			what += fmt.Sprintf("; %d revision(s) came while it built and were skipped for the newest", in.Render.Skipped)
		}
		if in.Previous != nil && !slow && in.Engine.Parked == 0 {
			return nil // a short render does not flap the condition
		}
		return in.progressing(what + "; " + waiting)
	case len(in.Open) > 0:
		return conditions.TrueCondition(refluxv1.DriftedCondition, refluxv1.DriftDetectedReason, "%s", driftMessage(in.Open))
	case !in.Engine.Checked:
		if in.Previous != nil && in.Previous.Status == metav1.ConditionFalse {
			return nil // the last check stands until this one is done
		}
		return in.progressing(fmt.Sprintf("checking %d live object(s) against revision %s", in.Engine.Unchecked, in.Applied))
	}
	return conditions.FalseCondition(refluxv1.DriftedCondition, refluxv1.NoDriftReason, "no drift from revision %s", in.Applied)
}

// letGo are the reasons the reconciler gives a Kustomization it refuses
// to govern (a cross-namespace sourceRef under lockdown, a remote
// cluster), having let go of everything of it.
var letGo = map[string]bool{apiacl.AccessDeniedReason: true, refluxv1.RemoteClusterUnsupportedReason: true}

func (in DriftedInput) progressing(msg string) *metav1.Condition {
	return conditions.UnknownCondition(refluxv1.DriftedCondition, refluxv1.RenderingReason, "%s", msg)
}

// waiting says what the live path keeps meanwhile.
func (in DriftedInput) waiting() string {
	if in.Engine.Parked == 0 {
		return "live changes are kept until it is current"
	}
	return fmt.Sprintf("%d live change(s) kept until it is current, %d of them held", in.Engine.Parked, in.Engine.Held)
}

// driftMessage summarises open records by severity and action, most
// severe first: "3 field(s) in 2 object(s) drifted: 1 critical, 2 low; 2
// Alert, 1 Merge". Which objects are held, and since when, is in the
// records and the policy's status.
func driftMessage(open []refluxv1.Drift) string {
	bySeverity := map[refluxv1.Severity]int{}
	byAction := map[refluxv1.Action]int{}
	fields, pending := 0, 0
	for _, d := range open {
		if d.Status.State == refluxv1.DriftPending {
			pending++
			continue
		}
		for _, f := range d.Spec.Fields {
			fields++
			bySeverity[f.Severity]++
			byAction[f.Action]++
		}
	}
	var sev, act []string
	for _, s := range []refluxv1.Severity{refluxv1.SeverityCritical, refluxv1.SeverityHigh, refluxv1.SeverityMedium, refluxv1.SeverityLow} {
		if n := bySeverity[s]; n > 0 {
			sev = append(sev, fmt.Sprintf("%d %s", n, s))
		}
	}
	for _, a := range []refluxv1.Action{refluxv1.MergeAction, refluxv1.AlertAction, refluxv1.IgnoreAction} {
		if n := byAction[a]; n > 0 {
			act = append(act, fmt.Sprintf("%d %s", n, a))
		}
	}
	msg := ""
	if n := len(open) - pending; n > 0 {
		msg = fmt.Sprintf("%d field(s) in %d object(s) drifted: %s; %s", fields, n, strings.Join(sev, ", "), strings.Join(act, ", "))
	}
	if pending > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("%d live change(s) recorded as pending, evaluated when the render lands", pending)
	}
	return msg
}
