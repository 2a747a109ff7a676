package evaluate

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// lostWrites returns, as drifted fields, what a Pending record says its
// writer held that the comparison no longer finds, when Flux took it off
// the live object meanwhile. The hold lane holds a change, and writes it
// down as Pending, while the live queue is behind; an apply Flux had
// already started when the hold landed still puts Git's values back, and
// the render that fills the record in then finds nothing of the change
// (the soak's "record has no field", for edits made in a failover). The
// Pending record is the only evidence left, so the change is recorded
// from it, as decide.Carry keeps an open record's lost fields.
//
// A written field counts when Git declares another value (or none), the
// live object no longer has the written value, and Flux wrote the object
// at or after the write. Metadata is left out: the writer's managedFields
// there are annotations tools add (kubectl's last-applied), not the
// change. So are the Kustomization's ignore rules.
func lostWrites(rec *refluxv1.Drift, found []drift.Field, want, live *unstructured.Unstructured, fluxApplied time.Time,
	ignore []string) []drift.Field {
	if rec == nil || rec.Status.State != refluxv1.DriftPending || rec.Spec.LastModifier == nil ||
		rec.Spec.LastModifier.Operation == refluxv1.DeleteOperation || rec.Spec.LastModifier.Time == nil || fluxApplied.IsZero() {
		return nil
	}
	if fluxApplied.Before(rec.Spec.LastModifier.Time.Truncate(time.Second)) {
		return nil // a writer, not Flux, wrote since
	}
	seen := make(map[string]bool, len(found))
	for _, f := range found {
		seen[f.Pointer] = true
	}
	var out []drift.Field
	for _, w := range rec.Spec.Written {
		if seen[w.Pointer] || w.LiveValue == "" || under(w.Pointer, "/metadata") || under(w.Pointer, "/status") || ignored(w.Pointer, ignore) {
			continue
		}
		git, declared := jsonptr.Get(want.Object, w.Pointer)
		if declared && jsonptr.Matches(git, w.LiveValue) {
			continue // Git's value all along
		}
		if now, ok := jsonptr.Get(live.Object, w.Pointer); ok && jsonptr.Matches(now, w.LiveValue) {
			continue // still live: the comparison had its reasons
		}
		f := drift.Field{Pointer: w.Pointer, GitPointer: w.Pointer, ChangeType: refluxv1.ChangeAdd, LiveValue: w.LiveValue,
			FluxReverts: true, Modifier: rec.Spec.LastModifier.DeepCopy()}
		if declared {
			f.ChangeType = refluxv1.ChangeUpdate
			if b, err := json.Marshal(git); err == nil {
				f.GitValue = string(b)
			}
		}
		out = append(out, f)
	}
	return out
}

func under(ptr, prefix string) bool { return ptr == prefix || strings.HasPrefix(ptr, prefix+"/") }

func ignored(ptr string, paths []string) bool {
	for _, p := range paths {
		if under(ptr, p) {
			return true
		}
	}
	return false
}

// withLost adds lost to fields, kept ordered by pointer.
func withLost(fields, lost []drift.Field) []drift.Field {
	if len(lost) == 0 {
		return fields
	}
	out := append(append([]drift.Field(nil), fields...), lost...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}
