package branches

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

// fieldRef is one drifted field with the record it belongs to.
type fieldRef struct {
	record *refluxv1.Drift
	field  refluxv1.DriftField
}

// refusal is a field reflux will not write, with why.
type refusal struct {
	fieldRef
	reason string
}

// group is what one branch carries.
type group struct {
	action  refluxv1.Action
	fields  []fieldRef
	refused []refusal
}

// writes is what the policy lets write-back write beyond a field's line.
type writes struct {
	// encrypt: Secret fields, SOPS-encrypted (spec.git.encryption has
	// recipients).
	encrypt bool
	// chartDefaults: a chart's field only its values.yaml sets, as a new
	// key under spec.values (spec.git.addChartDefaults).
	chartDefaults bool
}

func writesOf(git refluxv1.GitSpec) writes {
	enc := git.Encryption
	return writes{encrypt: enc != nil && len(enc.Age)+len(enc.PGP) > 0, chartDefaults: git.AddChartDefaults}
}

// split sorts fields into the Merge branch and, when alert branches are
// on, the Alert branch. Declared hotfixes and Ignore fields never reach Git.
// Secret fields are written only when the policy has SOPS recipients.
func split(records []refluxv1.Drift, alerts bool, can writes) []group {
	merge := group{action: refluxv1.MergeAction}
	alert := group{action: refluxv1.AlertAction}
	for i := range records {
		rec := &records[i]
		if rec.Spec.ManualHotfix {
			continue
		}
		for _, f := range rec.Spec.Fields {
			var g *group
			switch {
			case f.Action == refluxv1.MergeAction:
				g = &merge
			case f.Action == refluxv1.AlertAction && alerts:
				g = &alert
			default:
				continue
			}
			ref := fieldRef{record: rec, field: f}
			if reason := unwritable(rec, f, can); reason != "" {
				g.refused = append(g.refused, refusal{fieldRef: ref, reason: reason})
				continue
			}
			g.fields = append(g.fields, ref)
		}
	}
	// Both kinds, even empty: a kind with nothing left open retires the
	// branch that carried it.
	return []group{merge, alert}
}

// without returns the group with the fields the editor refused moved to
// its refusals: what the branch really carries.
func (g group) without(refused []refusal) group {
	if len(refused) == 0 {
		return g
	}
	out := group{action: g.action, refused: append([]refusal(nil), g.refused...)}
	for _, f := range g.fields {
		if i := slices.IndexFunc(refused, func(r refusal) bool {
			return r.record.Name == f.record.Name && r.field.Pointer == f.field.Pointer
		}); i >= 0 {
			out.refused = append(out.refused, refused[i])
			continue
		}
		out.fields = append(out.fields, f)
	}
	return out
}

// written names the records with a field on the branch.
func (g group) written() []string {
	set := map[string]bool{}
	for _, f := range g.fields {
		set[f.record.Name] = true
	}
	return sortedKeys(set)
}

// notWritten names the records none of whose fields is on the branch,
// with why.
func (g group) notWritten() map[string]string {
	written := map[string]bool{}
	for _, f := range g.fields {
		written[f.record.Name] = true
	}
	var out map[string]string
	for _, r := range g.refused {
		if written[r.record.Name] {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		o := r.record.Spec.Object
		out[r.record.Name] = joinReasons(out[r.record.Name], fmt.Sprintf("%s/%s %s: %s", o.Kind, o.Name, r.field.Pointer, r.reason))
	}
	return out
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// unwritable says why a field cannot be written from its record, or "".
func unwritable(rec *refluxv1.Drift, f refluxv1.DriftField, can writes) string {
	switch {
	case rec.Spec.OmittedFields > 0:
		return fmt.Sprintf("the live change drifted %d fields more than a record holds; part of it is not proposed", rec.Spec.OmittedFields)
	case f.DeletesObject():
		// Flux recreates the object; whether it should leave Git too is
		// for a reviewer to decide, not for a branch to propose.
		return "the object was deleted live; removing it from Git is not proposed"
	case rec.Spec.HelmRelease != nil:
		// Its Git side is a values key: a values change proposes it
		// (issue 19 §6), not an edit of the rendered field.
		return helmUnwritable(rec, f, can.chartDefaults)
	case f.ContentUnknown():
		// Only the audit log saw the write: there is no value to write.
		return "reflux does not read this Secret (--secrets=metadata): the audit log says it was written, not to what"
	case isSecret(rec) && !can.encrypt:
		// Plaintext Secret values never go to Git.
		return "Secret values are written only SOPS-encrypted, and the policy has no recipients (spec.git.encryption)"
	case isSecret(rec) && f.ChangeType == refluxv1.ChangeRemove:
		return "removing a Secret key is not written back yet"
	case isSecret(rec):
		return ""
	case f.Origin != nil && f.Origin.Refused != "":
		return "origin refused: " + f.Origin.Refused
	}
	return ""
}

// helmUnwritable says why a field a chart rendered cannot be written as
// a change of the one values key that sets it, or "". A key only the
// chart's values.yaml sets is added under spec.values when the policy
// says so (addChartDefaults).
func helmUnwritable(rec *refluxv1.Drift, f refluxv1.DriftField, addDefaults bool) string {
	o := f.Origin
	switch {
	case isSecret(rec):
		// The key would hold the plaintext in the HelmRelease.
		return "a Secret a chart rendered: its values are not written to the HelmRelease"
	case f.ChangeType == refluxv1.ChangeRemove:
		return "the field was removed live: removing a values key is not proposed"
	case o == nil:
		return "the values key that sets the field is not found yet"
	case o.Kind == string(chart.KindPostRenderer) && o.Refused == "":
		return fmt.Sprintf("a post-renderer's patch of the HelmRelease sets the field, at %s:%d: it is not written back", o.File, o.Line)
	case o.Refused == string(chart.KindChartDefault) && len(o.ValuesKeys) == 1:
		if addDefaults {
			return ""
		}
		return "origin refused: " + o.Refused + ": " + o.Why + " (spec.git.addChartDefaults lets reflux add it)"
	case o.Refused != "":
		return "origin refused: " + o.Refused + ": " + o.Why
	case o.Kind == string(chart.KindValuesFrom) && (len(o.ValuesKeys) != 1 || o.File == ""):
		return "no single values key in a file spec.valuesFrom takes sets the field"
	case o.Kind == string(chart.KindValuesFrom):
		// Its line in that file changes (valuesFromChange).
		return ""
	case (o.Kind != string(chart.KindValues) && o.Kind != string(chart.KindComputed)) || len(o.ValuesKeys) != 1 || o.File == "":
		// A computed field reaches here only with the one key whose
		// value the live edit changed (an image's tag).
		return "no single values key in spec.values sets the field"
	}
	return ""
}

func (g group) records() []string {
	set := map[string]bool{}
	for _, f := range g.fields {
		set[f.record.Name] = true
	}
	for _, r := range g.refused {
		set[r.record.Name] = true
	}
	return sortedKeys(set)
}

// fingerprint identifies exactly the fields this branch writes.
func (g group) fingerprint() string {
	byRecord := map[string]*refluxv1.Drift{}
	var order []string
	for _, f := range g.fields {
		d, ok := byRecord[f.record.Name]
		if !ok {
			d = f.record.DeepCopy()
			d.Spec.Fields = nil
			byRecord[f.record.Name] = d
			order = append(order, f.record.Name)
		}
		d.Spec.Fields = append(d.Spec.Fields, f.field)
	}
	recs := make([]refluxv1.Drift, 0, len(order))
	for _, n := range order {
		recs = append(recs, *byRecord[n])
	}
	return reverse.Fingerprint(recs)
}

func (g group) messageFields() []message.Field {
	out := make([]message.Field, 0, len(g.fields))
	for _, f := range g.fields {
		o := f.record.Spec.Object
		mf := message.Field{
			Object:  fmt.Sprintf("%s/%s %s/%s", o.APIVersion, o.Kind, o.Namespace, o.Name),
			Pointer: f.field.Pointer, GitValue: f.field.GitValue, LiveValue: f.field.LiveValue,
			Severity: string(f.field.Severity), Rule: f.field.Rule,
			Record: f.record.Namespace + "/" + f.record.Name,
		}
		if f.field.Origin != nil {
			mf.File, mf.Line = f.field.Origin.File, int(f.field.Origin.Line)
			if mf.File == "" {
				// A key added under spec.values: where it goes.
				mf.File, mf.Line = editAt(f.field.Origin.EditAt)
			}
			if f.record.Spec.HelmRelease != nil && len(f.field.Origin.ValuesKeys) == 1 {
				mf.ValuesKey, mf.Template = f.field.Origin.ValuesKeys[0], f.field.Origin.Template
			}
		}
		if m := f.field.Modifier; m != nil {
			mf.Manager, mf.User = m.Manager, m.User
			mf.LastModifier = m.Manager
			if m.User != "" {
				mf.LastModifier = m.User + " (" + m.Manager + ")"
			}
		}
		if f.field.FirstSeen != nil {
			mf.FirstSeen = f.field.FirstSeen.Time
		} else {
			mf.FirstSeen = f.record.Spec.FirstSeen.Time
		}
		out = append(out, mf)
	}
	return out
}

func (g group) refusals() string {
	return describe(g.refused)
}

func describe(refused []refusal) string {
	parts := make([]string, 0, len(refused))
	for _, r := range refused {
		o := r.record.Spec.Object
		parts = append(parts, fmt.Sprintf("%s/%s %s: %s", o.Kind, o.Name, r.field.Pointer, r.reason))
	}
	return strings.Join(parts, "; ")
}

func isSecret(rec *refluxv1.Drift) bool {
	return rec.Spec.Object.Kind == "Secret" && rec.Spec.Object.APIVersion == "v1"
}

// editAt splits an origin's EditAt, FILE:LINE, into its parts; "" and 0
// when it is not one.
func editAt(at string) (string, int) {
	i := strings.LastIndex(at, ":")
	if i < 0 {
		return "", 0
	}
	line, err := strconv.Atoi(at[i+1:])
	if err != nil {
		return "", 0
	}
	return at[:i], line
}
