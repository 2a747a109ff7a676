package decide

import (
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/record"
)

// A field stays on an open record from the moment it is seen diverging
// until Git declares its live value (merged), a person puts Git's value
// back, or the record closes. Flux undoing it never takes it off: the
// record is then the only evidence of the change (issue 22, the soak's
// "record has no field"). Without this, an object that drifted in field
// A, lost A to Flux's in-flight apply, and then drifted in field B,
// recorded B alone.
//
// The other half: once the proposal carrying such a lost field is
// merged, Git declares the value the record saw, while the live object
// (held for another field, so Flux does not apply) still has Git's old
// one. That is the merge waiting for Flux, not a new drift the other way,
// and proposing it would undo the merge.

// Carried is what an evaluation keeps of an open record's earlier fields.
type Carried struct {
	// Observation is the evaluation's observation without the fields
	// that only wait for Flux to apply a merged proposal.
	Observation record.Observation
	// Fields are the record's fields the observation lacks that stay on
	// it: lost to Flux and not merged, or merged and not applied yet.
	Fields []refluxv1.DriftField
	// Lost is true when one of Fields is evidence of a change Flux undid.
	Lost bool
}

// Carry decides which of an open record's fields survive an evaluation
// that does not find them, and takes out of the observation what only
// waits on Flux. merged says whether Git declares a record field's live
// value (see Declares); lost whether Flux's apply, rather than a person,
// took one of the record's fields off the live object (see FieldLost).
func Carry(rec *refluxv1.Drift, obs record.Observation, merged, lost func(refluxv1.DriftField) bool) Carried {
	out := Carried{Observation: obs}
	if rec == nil || !record.IsOpen(rec) || rec.Status.State == refluxv1.DriftPending || len(rec.Spec.Fields) == 0 {
		return out
	}
	prev := make(map[string]refluxv1.DriftField, len(rec.Spec.Fields))
	for _, f := range rec.Spec.Fields {
		prev[f.Pointer] = f
	}
	kept := make([]refluxv1.DriftField, 0, len(obs.Fields))
	seen := map[string]bool{}
	for _, f := range obs.Fields {
		if p, ok := prev[f.Pointer]; ok && awaitsFlux(p, f) {
			continue // carried below, as a field the observation lacks
		}
		kept = append(kept, f)
		seen[f.Pointer] = true
	}
	out.Observation.Fields = kept
	// Flux, not a person, took the record's change off the live object:
	// its apply undid it over the hold (LostLive, which stays while such
	// evidence is carried), or the managedFields say so (lost). A field
	// Flux does not revert (helm-controller's warn mode) was put back by
	// whoever did it.
	lostLive := carriesLost(rec)
	for _, p := range rec.Spec.Fields {
		if seen[p.Pointer] {
			continue
		}
		switch {
		case merged(p):
			if waiting(p, obs.Fields) {
				out.Fields = append(out.Fields, p)
			}
		case p.FluxReverts && (lostLive || lost(p)):
			out.Fields = append(out.Fields, p)
			out.Lost = true
		}
	}
	return out
}

// awaitsFlux reports whether f, found live, is the record's field p the
// other way round: Git now declares what p saw live, and the live object
// still has what Git declared then.
func awaitsFlux(p, f refluxv1.DriftField) bool {
	return f.GitValue == p.LiveValue && f.LiveValue == p.GitValue && (p.LiveValue != "" || p.GitValue != "")
}

// waiting reports whether the observation found p waiting for Flux to
// apply its merged value.
func waiting(p refluxv1.DriftField, found []refluxv1.DriftField) bool {
	for _, f := range found {
		if f.Pointer == p.Pointer {
			return awaitsFlux(p, f)
		}
	}
	return false
}

// FieldLost reports whether Flux's apply, rather than a person, took a
// record's field off the live object, by the rule of LostToFlux applied
// to the field alone: who owns it now, else whether Flux wrote the object
// at or after the field's change.
func FieldLost(f refluxv1.DriftField, owners Owners, fluxApplied time.Time) bool {
	var changed time.Time
	if f.FirstSeen != nil {
		changed = f.FirstSeen.Time
	}
	if f.Modifier != nil && f.Modifier.Time != nil {
		changed = f.Modifier.Time.Time
	}
	return undoneByFlux(owners, fluxApplied, changed)
}

// carriesLost reports whether rec keeps evidence of a change Flux undid
// live (LostLiveCondition): once merged, Flux must apply it again.
func carriesLost(rec *refluxv1.Drift) bool {
	return apimeta.IsStatusConditionTrue(rec.Status.Conditions, refluxv1.LostLiveCondition)
}
