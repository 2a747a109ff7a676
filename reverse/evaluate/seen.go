package evaluate

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/record"
)

// RecordSawLatestWrite reports whether rec, the record named name whose
// hold live carries, has seen every write to live that can be drift, so
// that looking at live again would find what rec already says. It is how
// a replica that takes over leaves alone the objects its predecessor held
// and recorded, instead of a dry run each while its own backlog waits
// (the soak's live queue fell 90 s behind so). The resync still checks
// them, paced, against the revision this replica renders.
//
// It holds only for a record that is complete as written: open, past
// Pending, no field left out, no dismissal asked and, where the audit log
// names writers (audited), every writer named. Its generation is not
// compared with its status: reflux rewrites the spec alone when only a
// writer's name or lastSeen moved, and a spec reflux did not write fails
// its seal before this is asked (execute.WithRecord). allowed reports the
// writers whose writes are never drift (Flux, reflux, the allow-listed).
// managedFields times have one-second resolution, so a write in the same
// second as the latest one the record names counts as seen; the resync is
// what finds such a write. When it does not hold, why says what stands in
// the way, for the debug log.
func RecordSawLatestWrite(rec *refluxv1.Drift, live *unstructured.Unstructured, name string, allowed func(manager string) bool,
	audited bool) (seen bool, why string) {
	why = unseenBecause(rec, live, name, allowed, audited)
	return why == "", why
}

// unseenBecause is RecordSawLatestWrite's why; "" when it holds.
func unseenBecause(rec *refluxv1.Drift, live *unstructured.Unstructured, name string, allowed func(manager string) bool,
	audited bool) string {
	switch {
	case rec == nil:
		return "no record"
	case !Held(live, name):
		return "not held under its record"
	case !record.IsOpen(rec) || decide.DismissRequested(rec):
		return "the record is closed or being dismissed"
	case rec.Status.State == refluxv1.DriftPending:
		return "the record is Pending"
	case rec.Spec.OmittedFields > 0 || len(rec.Spec.Fields) == 0:
		return "the record does not list every field"
	case audited && Unattributed(rec.Spec.Fields):
		return "the audit log has not named a writer yet"
	}
	seen := latestRecorded(rec)
	if seen.IsZero() {
		return "the record names no write time"
	}
	for _, e := range live.GetManagedFields() {
		if e.Subresource == "status" || e.Time == nil || allowed(e.Manager) {
			continue
		}
		if e.Time.Unix() > seen.Unix() {
			return fmt.Sprintf("%s wrote at %s, after the record's latest write at %s", e.Manager,
				e.Time.UTC().Format(time.RFC3339), seen.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

// latestRecorded is the time of the latest write a record names: its
// last modifier's, or a field's.
func latestRecorded(rec *refluxv1.Drift) time.Time {
	var last time.Time
	if m := rec.Spec.LastModifier; m != nil && m.Time != nil {
		last = m.Time.Time
	}
	for _, f := range rec.Spec.Fields {
		if m := f.Modifier; m != nil && m.Time != nil && m.Time.After(last) {
			last = m.Time.Time
		}
	}
	return last
}
