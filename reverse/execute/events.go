package execute

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/record"
)

// MetaKey prefixes event metadata the way Flux does:
// notification-controller forwards annotations in the involved object's
// API group.
func MetaKey(k string) string {
	return kustomizev1.GroupVersion.Group + "/" + k
}

// driftEvent emits the event for a new or changed record on its
// Kustomization: Warning when any field is an Alert (so Slack and PagerDuty
// routes fire), Normal for Merge-only drift and for declared hotfixes.
func driftEvent(rec EventRecorder, ks *kustomizev1.Kustomization, d *refluxv1.Drift) {
	if rec == nil {
		return
	}
	action, severity := record.Summary(d.Spec.Fields)
	eventType, reason := corev1.EventTypeNormal, refluxv1.DriftDetectedEventReason
	if action == refluxv1.AlertAction || hasAction(d.Spec.Fields, refluxv1.AlertAction) {
		eventType = corev1.EventTypeWarning
	}
	if d.Spec.ManualHotfix {
		eventType, reason = corev1.EventTypeNormal, refluxv1.ManualHotfixEventReason
	}
	prefix := ""
	if severity == refluxv1.SeverityCritical && !d.Spec.ManualHotfix {
		prefix = refluxv1.CriticalPrefix
	}
	meta := recordMeta(d)
	if m := d.Spec.LastModifier; m != nil {
		who := m.Manager
		switch {
		case m.User != "" && m.Manager != "":
			who = m.User + " (" + m.Manager + ")"
		case m.User != "":
			who = m.User // a deletion has no field manager
		}
		meta[MetaKey("reflux-modifier")] = who
	}
	what := "drifted from Git"
	switch {
	case deleted(d.Spec.Fields):
		what = "was deleted live while the applied revision declares it; Flux recreates it at its next reconcile"
	case slices.ContainsFunc(d.Spec.Fields, refluxv1.DriftField.ContentUnknown):
		what = "was written live, the audit log says; reflux does not read Secrets (--secrets=metadata), so what changed is unknown and nothing is written back"
	}
	rec.AnnotatedEventf(ks, meta, eventType, reason, "%s%s %s/%s %s: %s",
		prefix, d.Spec.Object.Kind, d.Spec.Object.Namespace, d.Spec.Object.Name, what, fieldSummary(d.Spec.Fields))
}

// recordMeta is the event metadata of a record: its revision, severity,
// action, name and origins.
func recordMeta(d *refluxv1.Drift) map[string]string {
	action, severity := record.Summary(d.Spec.Fields)
	return map[string]string{
		MetaKey(eventv1.MetaRevisionKey): d.Spec.Revision,
		MetaKey("reflux-severity"):       string(severity),
		MetaKey("reflux-action"):         string(action),
		MetaKey("reflux-record"):         d.Name,
		MetaKey("reflux-origin"):         origins(d.Spec.Fields),
	}
}

func hasAction(fields []refluxv1.DriftField, a refluxv1.Action) bool {
	for _, f := range fields {
		if f.Action == a {
			return true
		}
	}
	return false
}

// deleted reports whether the fields record the whole object deleted.
func deleted(fields []refluxv1.DriftField) bool {
	return slices.ContainsFunc(fields, refluxv1.DriftField.DeletesObject)
}

// fieldSummary lists up to five fields as `pointer (severity action)`.
func fieldSummary(fields []refluxv1.DriftField) string {
	var parts []string
	for i, f := range fields {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fields)-5))
			break
		}
		ptr := f.Pointer
		if ptr == refluxv1.WholeObjectPointer {
			ptr = "the whole object"
		}
		parts = append(parts, fmt.Sprintf("%s (%s %s, %s)", ptr, f.Severity, f.Action, f.ChangeType))
	}
	return strings.Join(parts, ", ")
}

// origins lists the distinct file:line origins of the fields.
func origins(fields []refluxv1.DriftField) string {
	set := map[string]bool{}
	for _, f := range fields {
		if f.Origin == nil || f.Origin.File == "" {
			continue
		}
		if f.Origin.Line > 0 {
			set[fmt.Sprintf("%s:%d", f.Origin.File, f.Origin.Line)] = true
		} else {
			set[f.Origin.File] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// lostEvent raises the Warning event of a held live change Flux undid
// over its hold: an Alert routes it, as it routes new drift, with the
// record's severity.
func lostEvent(rec EventRecorder, ks *kustomizev1.Kustomization, d *refluxv1.Drift, why string) {
	if rec == nil {
		return
	}
	prefix := ""
	if _, severity := record.Summary(d.Spec.Fields); severity == refluxv1.SeverityCritical {
		prefix = refluxv1.CriticalPrefix
	}
	rec.AnnotatedEventf(ks, recordMeta(d), corev1.EventTypeWarning, refluxv1.LiveChangeLostEventReason, "%s%s %s/%s: %s: %s",
		prefix, d.Spec.Object.Kind, d.Spec.Object.Namespace, d.Spec.Object.Name, why, fieldSummary(d.Spec.Fields))
}

// expiredEvent raises the paging event of an expired hold.
func expiredEvent(rec EventRecorder, p *Plan, d *refluxv1.Drift) {
	if rec == nil {
		return
	}
	what := "kept held until a person decides (onExpiry: Alert)"
	if d.Status.State == refluxv1.DriftExpired {
		what = "released so that Flux restores Git (onExpiry: Release)"
	}
	at := ""
	if d.Status.HoldExpiresAt != nil {
		at = d.Status.HoldExpiresAt.UTC().Format(time.RFC3339)
	}
	meta := map[string]string{
		MetaKey(eventv1.MetaRevisionKey): d.Spec.Revision,
		MetaKey("reflux-severity"):       string(refluxv1.SeverityCritical),
		MetaKey("reflux-record"):         d.Name,
		MetaKey("reflux-hold-expired"):   at,
	}
	kind := "hold"
	if d.Spec.ManualHotfix {
		kind = "manual hotfix hold"
	}
	rec.AnnotatedEventf(p.Kustomization, meta, corev1.EventTypeWarning, refluxv1.HoldExpiredEventReason, "%s%s %s/%s: %s reached its maximum age at %s: %s",
		refluxv1.CriticalPrefix, d.Spec.Object.Kind, d.Spec.Object.Namespace, d.Spec.Object.Name, kind, at, what)
}
