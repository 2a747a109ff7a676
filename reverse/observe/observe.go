package observe

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Who is the audited writer of a change: the user and its groups, as the
// audit event names them. The zero value is unknown.
type Who struct {
	User   string
	Groups []string
}

// Attributor names the user behind a field manager's write at a time, from
// the audit log; the zero Who when unknown (yet).
type Attributor func(manager string, at time.Time) Who

// Remover returns the latest write to the object at or before at by a
// writer whose writes can be drift, with its user; nil when the audit log
// has not delivered one (yet).
type Remover func(at time.Time) *refluxv1.Modifier

// Input is one evaluated live object.
type Input struct {
	// Kustomization and Policy govern the object.
	Kustomization refluxv1.KustomizationRef
	Policy        string
	// Revision is the applied revision Desired was rendered from.
	Revision string
	// Live is the live object; Desired the rendered one.
	Live, Desired *unstructured.Unstructured
	// Result is the detector's answer for Live against Desired.
	Result drift.Result
	// Index maps rendered fields to their origin; nil when the overlay
	// could not be indexed.
	Index *origin.Index
	// Origins, when set, gives each field's origin instead of Index: a
	// chart's field comes from a values key (reverse/helmlive).
	Origins func(pointer string) *refluxv1.FieldOrigin
	// OwnerFile is the file that declares the object Desired is rendered
	// from, when that is another one (a HelmRelease); a rule's paths
	// match it too (classify.Field).
	OwnerFile string
	// Classifier applies the policy's rules.
	Classifier *classify.Classifier
	// Attribute names users; nil skips attribution.
	Attribute Attributor
	// Remover names the writer of a removed field from the audit log: a
	// removal leaves no managedFields entry to name it. Nil leaves
	// removals unattributed.
	Remover Remover
	// Now is when the observation is made.
	Now time.Time
}

// Result is an observation and whether it asks for a hold.
type Result struct {
	Observation record.Observation
	// Hold is true when some field's rule holds it and Flux would revert it.
	Hold bool
	// HoldFor bounds the hold; 0 is no limit (see Hold.For).
	HoldFor time.Duration
}

// Observe classifies the drift of one object.
func Observe(in Input) Result {
	fields := renderedFields(in.Result)
	ref := origin.RefOf(in.Desired)
	for i := range fields {
		if in.Origins != nil {
			fields[i].Origin = in.Origins(fields[i].Pointer)
		} else {
			fields[i].Origin = Origin(in.Index, ref, fields[i].Pointer)
		}
		attributeRemoval(in.Remover, in.Now, &fields[i])
		attribute(in.Attribute, in.Now, &fields[i])
	}
	annotated := in.Classifier.IsManualHotfix(in.Live.GetAnnotations())
	intent := AuditIntent(in.Classifier, fields)
	hotfix := annotated || intent != nil
	hold := Classify(in.Classifier, in.Desired.GetKind(), in.OwnerFile, fields, hotfix)
	obs := record.Observation{
		Kustomization: in.Kustomization,
		Policy:        in.Policy,
		Object:        ObjectRef(in.Live),
		Revision:      in.Revision,
		Fields:        fields,
		ManualHotfix:  hotfix,
		HotfixBy:      intent,
		Now:           in.Now,
	}
	if intent != nil && !annotated {
		// Declared by the audit log: the object gets the annotation too,
		// so the hotfix is visible where people look.
		k, v := in.Classifier.HotfixAnnotation()
		obs.Mark = map[string]string{k: v}
	}
	return Result{
		Observation: obs,
		Hold:        hold.Hold,
		HoldFor:     hold.For,
	}
}

// ObjectRef names a live object the way a Drift record does.
func ObjectRef(live *unstructured.Unstructured) refluxv1.ObjectRef {
	return refluxv1.ObjectRef{
		APIVersion: live.GetAPIVersion(), Kind: live.GetKind(), Namespace: live.GetNamespace(),
		Name: live.GetName(), UID: string(live.GetUID()),
	}
}

// attribute names the user behind a field's last write.
func attribute(names Attributor, now time.Time, f *refluxv1.DriftField) {
	if names == nil || f.Modifier == nil {
		return
	}
	at := now
	if f.Modifier.Time != nil {
		at = f.Modifier.Time.Time
	}
	if who := names(f.Modifier.Manager, at); who.User != "" {
		f.Modifier.User, f.Modifier.Groups = who.User, who.Groups
	}
}

// attributeRemoval names who removed a field: managedFields keep no
// entry for what is gone, so the audit log's write to the object is the
// only witness (issue 17 §3).
func attributeRemoval(names Remover, now time.Time, f *refluxv1.DriftField) {
	if names == nil || f.Modifier != nil || f.ChangeType != refluxv1.ChangeRemove || f.Pointer == refluxv1.WholeObjectPointer {
		return
	}
	f.Modifier = names(now)
}

// AuditIntent returns the audit event that declares the drift a manual
// hotfix: the first field (in pointer order) whose audited writer is in
// the policy's manualHotfix.fromUsers or fromGroups. Nil when none is, or
// no writer is known yet.
func AuditIntent(c *classify.Classifier, fields []refluxv1.DriftField) *refluxv1.HotfixIntent {
	for _, f := range fields {
		m := f.Modifier
		if m == nil {
			continue
		}
		if matched, ok := c.HotfixFrom(m.User, m.Groups); ok {
			return &refluxv1.HotfixIntent{User: m.User, Groups: append([]string(nil), m.Groups...), Matched: matched,
				Manager: m.Manager}
		}
	}
	return nil
}

// renderedFields returns the detector's fields with pointers into the
// rendered object: records, rules and edits all speak of what the overlay
// declares, and overlays reorder lists, so a live index may name another
// element. A field in a list element only the live object has keeps its
// live pointer, since the render has no position for it.
func renderedFields(res drift.Result) []refluxv1.DriftField {
	fields := res.DriftFields()
	for i, f := range res.Fields {
		if f.GitPointer != "" && !strings.Contains(f.GitPointer+"/", "/-/") {
			fields[i].Pointer = f.GitPointer
		}
	}
	return fields
}
