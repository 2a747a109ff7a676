package record

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
)

// Labels on every Drift record, so that a Kustomization's records are one
// label-selected list away and `kubectl get drifts -l` works.
const (
	KustomizationNameLabel      = "reflux.dev/kustomization-name"
	KustomizationNamespaceLabel = "reflux.dev/kustomization-namespace"
)

// maxNameLen keeps record names valid as DNS subdomains with room to spare.
const maxNameLen = 63

// Name returns the record name for a live object governed by a
// Kustomization. It is deterministic, so that a restart or a new leader
// finds the same record instead of writing a duplicate, and readable,
// so that `kubectl get drifts` says which object it is about.
func Name(ks refluxv1.KustomizationRef, obj refluxv1.ObjectRef) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{
		ks.Namespace, ks.Name, obj.APIVersion, obj.Kind, obj.Namespace, obj.Name,
	}, "/")))
	hash := hex.EncodeToString(sum[:])[:10]
	base := sanitize(strings.ToLower(obj.Kind) + "-" + obj.Name)
	if max := maxNameLen - len(hash) - 1; len(base) > max {
		base = strings.TrimRight(base[:max], "-.")
	}
	if base == "" {
		return "drift-" + hash
	}
	return base + "-" + hash
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// Observation is what the drift engine saw for one live object.
type Observation struct {
	Kustomization refluxv1.KustomizationRef
	// HelmRelease is set when a Helm release rendered the object.
	HelmRelease *refluxv1.HelmReleaseRef
	Policy      string
	Object      refluxv1.ObjectRef
	Revision    string
	// Fields are the drifted fields, already classified.
	Fields       []refluxv1.DriftField
	ManualHotfix bool
	// HotfixBy is the audit event that declared the hotfix, when the
	// policy's fromUsers or fromGroups did.
	HotfixBy *refluxv1.HotfixIntent
	// Mark is the manual-hotfix annotation to add to the live object, when
	// the audit log declared the hotfix and the object lacks it. It is not
	// part of the record.
	Mark map[string]string
	// Now is when the observation was made.
	Now time.Time
}

// Merge returns the record for an observation, carried over from existing
// (nil when there is none). First-seen times survive: a field keeps the
// time it first diverged for as long as it keeps diverging, which is what
// the divergence-age metric and the commit message report.
func Merge(existing *refluxv1.Drift, obs Observation) *refluxv1.Drift {
	now := metav1.NewTime(obs.Now)
	out := &refluxv1.Drift{}
	if existing != nil {
		out = existing.DeepCopy()
	} else {
		out.Name = Name(obs.Kustomization, obs.Object)
		out.Namespace = obs.Kustomization.Namespace
		out.Spec.FirstSeen = now
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[KustomizationNameLabel] = obs.Kustomization.Name
	out.Labels[KustomizationNamespaceLabel] = obs.Kustomization.Namespace

	prev := map[string]refluxv1.DriftField{}
	if existing != nil {
		for _, f := range existing.Spec.Fields {
			prev[f.Pointer] = f
		}
	}
	fields := make([]refluxv1.DriftField, 0, len(obs.Fields))
	for _, f := range obs.Fields {
		f := *f.DeepCopy()
		p, seen := prev[f.Pointer]
		if seen && p.FirstSeen != nil && p.ChangeType == f.ChangeType {
			f.FirstSeen = p.FirstSeen
		} else if f.FirstSeen == nil {
			f.FirstSeen = &now
		}
		if seen && keepsRemover(p, f) {
			// A removal leaves no managedFields entry; the audit log named
			// its writer when it was first seen, and a later look would
			// only find later writes to the object.
			f.Modifier = p.Modifier.DeepCopy()
		}
		fields = append(fields, f)
	}
	fields, omitted := bound(fields)

	out.Spec.Kustomization = obs.Kustomization
	out.Spec.HelmRelease = obs.HelmRelease.DeepCopy()
	out.Spec.Policy = obs.Policy
	out.Spec.Object = obs.Object
	out.Spec.Revision = obs.Revision
	out.Spec.Fields = fields
	out.Spec.OmittedFields = omitted
	out.Spec.ManualHotfix = obs.ManualHotfix
	switch {
	case !obs.ManualHotfix:
		out.Spec.ManualHotfixBy = nil
	case obs.HotfixBy != nil:
		by := obs.HotfixBy.DeepCopy()
		if existing != nil && existing.Spec.ManualHotfixBy != nil && by.MarkedKey == "" {
			by.MarkedKey = existing.Spec.ManualHotfixBy.MarkedKey
		}
		out.Spec.ManualHotfixBy = by
	}
	// Otherwise the intent the audit log declared earlier stays: once
	// reflux has marked the object, the annotation carries the hotfix,
	// and the audit store forgets the write after its TTL.
	out.Spec.LastSeen = now
	out.Spec.LastModifier = lastModifier(fields)
	// Evaluated: the fields say what diverges, and what a Pending record
	// knew before is superseded.
	out.Spec.Written = nil
	return out
}

// LastModifier is the most recent writer among an observation's fields.
func (o Observation) LastModifier() *refluxv1.Modifier { return lastModifier(o.Fields) }

// keepsRemover reports whether field f, still the removal prev recorded,
// keeps prev's writer.
func keepsRemover(prev, f refluxv1.DriftField) bool {
	return prev.ChangeType == refluxv1.ChangeRemove && f.ChangeType == refluxv1.ChangeRemove &&
		prev.Modifier != nil && prev.Modifier.User != ""
}

// lastModifier is the most recent writer among the fields.
func lastModifier(fields []refluxv1.DriftField) *refluxv1.Modifier {
	var last *refluxv1.Modifier
	for _, f := range fields {
		m := f.Modifier
		if m == nil {
			continue
		}
		if last == nil || (m.Time != nil && (last.Time == nil || m.Time.After(last.Time.Time))) {
			last = m.DeepCopy()
		}
	}
	return last
}

// Summary is the strongest action and highest severity among a record's
// fields, for its status and printer columns.
func Summary(fields []refluxv1.DriftField) (refluxv1.Action, refluxv1.Severity) {
	var action refluxv1.Action
	var severity refluxv1.Severity
	for _, f := range fields {
		action = classify.StrongestAction(action, f.Action)
		severity = classify.MaxSeverity(severity, f.Severity)
	}
	return action, severity
}

// Status is what a record's status and printer columns say of it: the
// strongest action and highest severity among its fields, except that a
// declared manual hotfix says ManualHotfix, since it is held and never
// written to Git whatever its fields' rules say (issue 17 §4).
func Status(d *refluxv1.Drift) (refluxv1.DriftAction, refluxv1.Severity) {
	action, severity := Summary(d.Spec.Fields)
	if d.Spec.ManualHotfix {
		return refluxv1.DriftManualHotfix, severity
	}
	return refluxv1.DriftAction(action), severity
}

// IsOpen reports whether a record still asks for attention: not resolved,
// not dismissed, and not released because its hold expired.
func IsOpen(d *refluxv1.Drift) bool {
	switch d.Status.State {
	case refluxv1.DriftResolved, refluxv1.DriftDismissed, refluxv1.DriftExpired:
		return false
	}
	return d.Annotations[refluxv1.DismissAnnotation] != "true"
}

// Open keeps the records that still ask for attention: open, and not
// being deleted.
func Open(all []refluxv1.Drift) []refluxv1.Drift {
	var open []refluxv1.Drift
	for _, d := range all {
		if IsOpen(&d) && d.DeletionTimestamp.IsZero() {
			open = append(open, d)
		}
	}
	return open
}

// Evaluated keeps the open records a render has filled in: what a branch
// may propose. A Pending record says what was written, not what diverges
// from Git, so nothing of it is written back until its render lands.
func Evaluated(all []refluxv1.Drift) []refluxv1.Drift {
	var out []refluxv1.Drift
	for _, d := range Open(all) {
		if d.Status.State != refluxv1.DriftPending {
			out = append(out, d)
		}
	}
	return out
}

// EarliestFirstSeen is the first-seen time of the oldest diverging field.
func EarliestFirstSeen(d *refluxv1.Drift) time.Time {
	earliest := d.Spec.FirstSeen.Time
	for _, f := range d.Spec.Fields {
		if f.FirstSeen != nil && (earliest.IsZero() || f.FirstSeen.Before(&metav1.Time{Time: earliest})) {
			earliest = f.FirstSeen.Time
		}
	}
	return earliest
}

// MaxFields is how many fields a record holds, as the CRD's MaxItems
// says: a record over it would be refused whole by the apiserver, and the
// live change would go unrecorded.
const MaxFields = 256

// severityRank orders severities, most severe first.
var severityRank = map[refluxv1.Severity]int{refluxv1.SeverityCritical: 0, refluxv1.SeverityHigh: 1,
	refluxv1.SeverityMedium: 2, refluxv1.SeverityLow: 3}

// bound keeps at most MaxFields fields, the most severe first and then by
// pointer, and returns them by pointer with how many it left out. An
// object edited wholesale (10,000 keys of a ConfigMap, say) is still
// recorded, and held, with what matters most.
func bound(fields []refluxv1.DriftField) ([]refluxv1.DriftField, int32) {
	omitted := 0
	if len(fields) > MaxFields {
		rank := func(s refluxv1.Severity) int {
			if r, ok := severityRank[s]; ok {
				return r
			}
			return len(severityRank)
		}
		sort.SliceStable(fields, func(i, j int) bool {
			if a, b := rank(fields[i].Severity), rank(fields[j].Severity); a != b {
				return a < b
			}
			return fields[i].Pointer < fields[j].Pointer
		})
		omitted = len(fields) - MaxFields
		fields = fields[:MaxFields]
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Pointer < fields[j].Pointer })
	return fields, int32(omitted)
}
