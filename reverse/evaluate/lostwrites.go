package evaluate

import (
	"encoding/json"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// write is one writer's write as a watch saw it: who, and the fields it
// held with their values just after.
type write struct {
	by     *refluxv1.Modifier
	fields []refluxv1.WrittenField
}

// lostEdits returns, as drifted fields, what the edits a watch saw
// (intake.Change.Edits) wrote that the comparison no longer finds,
// because Flux took it off the live object before a worker evaluated
// the change. An apply Flux had started before the edit, or one that
// ran while the change waited behind a backlog, leaves the live object as
// Git has it; only the object the watch delivered still says what was
// written (the soak's "record has no field" and "Merge flag on no
// branch"). The latest edit says first what a field was.
func (e *Evaluator) lostEdits(edits []*unstructured.Unstructured, found []drift.Field, want, live *unstructured.Unstructured,
	ignore []string) []drift.Field {
	if len(edits) == 0 {
		return nil
	}
	fluxApplied := LastWrite(live.GetManagedFields(), e.opts.Detector.FluxOwned)
	var users UserNamer
	if e.opts.Attributor != nil {
		users = e.opts.Attributor
	}
	seen := make(map[string]bool, len(found))
	for _, f := range found {
		seen[f.Pointer] = true
	}
	var out []drift.Field
	for i := len(edits) - 1; i >= 0; i-- {
		by, fields, err := WrittenBy(e.opts.Detector, users, edits[i])
		if err != nil || by == nil {
			continue // unreadable, or nobody wrote it whose writes are drift
		}
		for _, f := range lostWrites(write{by: by, fields: fields}, seen, want, live, fluxApplied, ignore) {
			seen[f.Pointer] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// lostWrites returns, as drifted fields, what w held that Flux took off
// the live object: a field not seen (found by the comparison, or lost in
// a later edit) counts when Git declares another value (or none), the
// live object no longer has the written value, and Flux wrote the object
// at or after the write. managedFields times have one-second resolution,
// so Flux's write in w's second counts as after it, which keeps the
// evidence in the ambiguous case. Metadata is left out: the writer's
// managedFields there are annotations tools add (kubectl's
// last-applied), not the change. So are the Kustomization's ignore
// rules.
func lostWrites(w write, seen map[string]bool, want, live *unstructured.Unstructured, fluxApplied time.Time,
	ignore []string) []drift.Field {
	if w.by == nil || w.by.Time == nil || fluxApplied.IsZero() || fluxApplied.Before(w.by.Time.Truncate(time.Second)) {
		return nil // a writer, not Flux, wrote since, or Flux never did
	}
	var out []drift.Field
	for _, f := range w.fields {
		if seen[f.Pointer] || f.LiveValue == "" || jsonptr.Under(f.Pointer, "/metadata") || jsonptr.Under(f.Pointer, "/status") || ignored(f.Pointer, ignore) {
			continue
		}
		git, declared := jsonptr.Get(want.Object, f.Pointer)
		if declared && jsonptr.Matches(git, f.LiveValue) {
			continue // Git's value all along
		}
		if now, ok := jsonptr.Get(live.Object, f.Pointer); ok && jsonptr.Matches(now, f.LiveValue) {
			continue // still live: the comparison had its reasons
		}
		lost := drift.Field{Pointer: f.Pointer, GitPointer: f.Pointer, ChangeType: refluxv1.ChangeAdd, LiveValue: f.LiveValue,
			FluxReverts: true, Modifier: w.by.DeepCopy()}
		if declared {
			lost.ChangeType = refluxv1.ChangeUpdate
			if b, err := json.Marshal(git); err == nil {
				lost.GitValue = string(b)
			}
		}
		out = append(out, lost)
	}
	return out
}

func ignored(ptr string, paths []string) bool {
	for _, p := range paths {
		if jsonptr.Under(ptr, p) {
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
