package evaluate

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Deletion is the observation of a deleted object: the whole object
// removed, at the document that declares it (want, in the applied
// revision's render r), by who, classified by the policy (Alert, high, by
// default) and never held. last is the object as last seen.
func Deletion(g *reverse.Governed, r *desired.Render, want, last *unstructured.Unstructured, who reverse.Deleter,
	seen, now time.Time) record.Observation {
	at := metav1.NewTime(firstOf(seen, now))
	f := refluxv1.DriftField{ChangeType: refluxv1.ChangeRemove,
		Modifier: &refluxv1.Modifier{Operation: refluxv1.DeleteOperation, User: who.User, Time: &at}}
	return wholeObject(g, r, want, last, f, now)
}

// AuditedSecret is what the audit log says of a write to a declared
// Secret reflux does not read: the whole object changed (content unknown)
// or deleted, by whom and when.
func AuditedSecret(g *reverse.Governed, r *desired.Render, want *unstructured.Unstructured, w reverse.AuditedWrite,
	seen, now time.Time) record.Observation {
	at := metav1.NewTime(firstOf(w.Time, seen, now))
	f := refluxv1.DriftField{ChangeType: refluxv1.ChangeUpdate,
		Modifier: &refluxv1.Modifier{Manager: w.Manager, Operation: operation(w.Verb), User: w.User,
			Groups: slices.Clone(w.Groups), Time: &at}}
	if w.Verb == "delete" {
		f.ChangeType = refluxv1.ChangeRemove
	}
	return wholeObject(g, r, want, want, f, now)
}

// wholeObject is the observation of one field f at the whole object, at
// the document that declares it, classified by the policy and never held.
// obj is the object the record names.
func wholeObject(g *reverse.Governed, r *desired.Render, want, obj *unstructured.Unstructured, f refluxv1.DriftField,
	now time.Time) record.Observation {
	f.Pointer, f.FluxReverts = refluxv1.WholeObjectPointer, true
	// The name line of the document (or, for a generated object, where
	// its generator is declared) is the place a reviewer looks.
	f.Origin = observe.Origin(r.Index, origin.RefOf(want), "/metadata/name")
	fields := []refluxv1.DriftField{f}
	observe.Classify(g.Classifier, want.GetKind(), "", fields, false)
	return record.Observation{
		Kustomization: g.Ref(),
		Policy:        g.Policy.Name,
		Object:        observe.ObjectRef(obj),
		Revision:      r.Revision,
		Fields:        fields,
		Now:           now,
	}
}

// operation names an audited verb as managedFields name operations.
func operation(verb string) string {
	switch verb {
	case "apply":
		return "Apply"
	case "delete":
		return refluxv1.DeleteOperation
	}
	return "Update"
}

// firstOf returns the first of times that is set.
func firstOf(times ...time.Time) time.Time {
	for _, t := range times {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
