package evaluate

import (
	"encoding/json"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// Closer fills in who closed a record, the revision it closed at and
// when, before the executor writes the close (execute.Closer).
func (e *Evaluator) Closer(rec *refluxv1.Drift, c *refluxv1.DriftClosure, revision string) *refluxv1.DriftClosure {
	out := c.DeepCopy()
	if out.By == "" {
		out.By = e.ClosedBy(rec, out)
	}
	if out.Revision == "" {
		out.Revision = revision
	}
	if out.Time.IsZero() {
		out.Time = metav1.NewTime(e.opts.Now().Truncate(time.Second))
	}
	return out
}

// ClosedBy names who closed a record, for its status.closed.by and the
// comment that closes its pull request: the user the audit log names,
// with the field manager, or the field manager alone. "" when unknown.
//
//   - a dismissal: whoever set reflux.dev/dismiss on the record
//     (its managedFields say which manager, and when);
//   - a deleted record: whoever deleted it;
//   - a revert: whoever last wrote the live object, leaving out the
//     writers whose writes are never drift.
func (e *Evaluator) ClosedBy(rec *refluxv1.Drift, c *refluxv1.DriftClosure) string {
	switch c.Reason {
	case refluxv1.ClosedDismissedReason:
		m, ok := annotationWriter(rec.ManagedFields, refluxv1.DismissAnnotation)
		if !ok {
			return ""
		}
		return e.who(driftObject(rec), m.Manager, m.Time)
	case refluxv1.ClosedRecordDeletedReason:
		if e.opts.Attributor == nil || rec.DeletionTimestamp == nil {
			return ""
		}
		d, _ := e.opts.Attributor.Deleter(driftObject(rec), rec.DeletionTimestamp.Time)
		return d.User
	case refluxv1.ClosedRevertedReason:
		o := rec.Spec.Object
		live, ok := e.opts.Live.Get(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind), o.Namespace, o.Name)
		if !ok {
			return ""
		}
		m, ok := latestWriter(live.GetManagedFields(), e.benign)
		if !ok {
			return ""
		}
		return e.who(live, m.Manager, m.Time)
	}
	return ""
}

// who is "user (manager)" when the audit log names the user, else the
// manager.
func (e *Evaluator) who(obj *unstructured.Unstructured, manager string, at *metav1.Time) string {
	if e.opts.Attributor == nil || manager == "" {
		return manager
	}
	when := e.opts.Now()
	if at != nil {
		when = at.Time
	}
	if u := e.opts.Attributor.User(obj, manager, when); u.User != "" {
		return u.User + " (" + manager + ")"
	}
	return manager
}

// driftObject names a record the way the audit log and the mapper know
// it.
func driftObject(rec *refluxv1.Drift) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(refluxv1.GroupVersion.WithKind(refluxv1.DriftKind))
	u.SetNamespace(rec.Namespace)
	u.SetName(rec.Name)
	return u
}

// annotationWriter is the managedFields entry that owns annotation key.
func annotationWriter(entries []metav1.ManagedFieldsEntry, key string) (metav1.ManagedFieldsEntry, bool) {
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields["f:metadata"]["f:annotations"]["f:"+key]; ok {
			return e, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// latestWriter is the most recent managedFields entry of a manager
// benign does not leave out.
func latestWriter(entries []metav1.ManagedFieldsEntry, benign func(string) bool) (metav1.ManagedFieldsEntry, bool) {
	var out []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if e.Time != nil && !benign(e.Manager) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return metav1.ManagedFieldsEntry{}, false
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Time.After(out[j].Time.Time) })
	return out[0], true
}
