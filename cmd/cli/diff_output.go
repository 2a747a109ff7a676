package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// diffReport is what `reflux diff kustomization` found: the objects whose
// live state diverges from the revision compared, in build order.
type diffReport struct {
	Kustomization string `json:"kustomization"`
	// Revision is what was compared: the source's artifact, or the local
	// checkout given with --path.
	Revision string `json:"revision"`
	// Applied is the revision Flux last applied.
	Applied string `json:"appliedRevision"`
	// Policy is the ReverseSyncPolicy whose rules classified the fields;
	// "" when none governs the Kustomization (the defaults then apply).
	Policy  string       `json:"policy,omitempty"`
	Objects []objectDiff `json:"-"`
	// Compared counts the objects compared; Encrypted those left out
	// because Flux decrypts them with keys reflux does not hold.
	Compared  int `json:"compared"`
	Encrypted int `json:"encrypted,omitempty"`
}

// objectDiff is one drifted object, printed as one JSON line.
type objectDiff struct {
	Kustomization string      `json:"kustomization"`
	Object        string      `json:"object"`
	APIVersion    string      `json:"apiVersion"`
	Fields        []diffField `json:"fields"`
	// Excluded says why Flux leaves the live object alone for now
	// (reconcile: disabled, as a reflux hold sets it); "" when it does not.
	Excluded string `json:"excluded,omitempty"`
}

// diffField is one drifted field with its origin and the rule that
// classifies it.
type diffField struct {
	Pointer string `json:"pointer"`
	Change  string `json:"change"`
	Live    string `json:"liveValue,omitempty"`
	Git     string `json:"gitValue,omitempty"`
	// Origin is FILE:LINE:COL of the declaration; "" when refused.
	Origin string `json:"origin,omitempty"`
	// Refused names why the field has no origin, and EditAt where to edit
	// instead, when there is such a place.
	Refused  string `json:"refused,omitempty"`
	EditAt   string `json:"editAt,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Action   string `json:"action"`
	Severity string `json:"severity"`
	// FluxReverts is true when Flux's next apply puts Git's value back.
	FluxReverts bool `json:"fluxReverts"`
}

// fieldsOf turns classified drift fields into the report's.
func fieldsOf(fields []refluxv1.DriftField) []diffField {
	out := make([]diffField, 0, len(fields))
	for _, f := range fields {
		d := diffField{Pointer: f.Pointer, Change: string(f.ChangeType), Live: f.LiveValue, Git: f.GitValue,
			Rule: f.Rule, Action: string(f.Action), Severity: string(f.Severity), FluxReverts: f.FluxReverts}
		if o := f.Origin; o != nil {
			if o.Refused != "" {
				d.Refused, d.EditAt = o.Refused, o.EditAt
			} else {
				d.Origin = fmt.Sprintf("%s:%d:%d", o.File, o.Line, o.Column)
			}
		}
		out = append(out, d)
	}
	return out
}

// drifted counts the drifted objects and fields.
func (r diffReport) drifted() (objects, fields int) {
	return countDrift(r.Objects, func(o objectDiff) int { return len(o.Fields) })
}

// countDrift counts the drifted objects of a report and their fields.
func countDrift[O any](objs []O, fieldsOf func(O) int) (objects, fields int) {
	for _, o := range objs {
		objects++
		fields += fieldsOf(o)
	}
	return objects, fields
}

// jsonLines writes each item as one line of JSON.
func jsonLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// printDiff writes the report: one JSON object per drifted object, or
// aligned columns under a header, as `flux diff` and `kubectl get` look.
func printDiff(w io.Writer, asJSON bool, r diffReport) error {
	if asJSON {
		return jsonLines(w, r.Objects)
	}
	policy := r.Policy
	if policy == "" {
		policy = "none (default rules)"
	}
	fmt.Fprintf(w, "# Kustomization %s, %s against the live cluster (applied: %s), policy %s\n",
		r.Kustomization, r.Revision, r.Applied, policy)
	objects, fields := r.drifted()
	if objects == 0 {
		fmt.Fprintf(w, "# no drift in %d object(s)\n", r.Compared)
		return encryptedNote(w, r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tFIELD\tCHANGE\tLIVE\tGIT\tORIGIN\tRULE\tACTION")
	for _, o := range r.Objects {
		for _, f := range o.Fields {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Object, pointerCell(f.Pointer), f.Change,
				cell(f.Live), cell(f.Git), originCell(f), ruleCell(f.Rule), f.Action+" "+f.Severity)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "# %d field(s) drifted in %d of %d object(s)\n", fields, objects, r.Compared)
	for _, o := range r.Objects {
		if o.Excluded != "" {
			fmt.Fprintf(w, "# %s: Flux leaves it alone for now (%s)\n", o.Object, o.Excluded)
		}
	}
	return encryptedNote(w, r)
}

func encryptedNote(w io.Writer, r diffReport) error {
	if r.Encrypted == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "# %d SOPS-encrypted object(s) not compared: Flux decrypts them with keys reflux does not hold\n", r.Encrypted)
	return err
}

// maxCell bounds a value's width in the table; -o json has it whole.
const maxCell = 40

// cell prints a value on one line, shortened to maxCell runes.
func cell(v string) string {
	if v == "" {
		return "-"
	}
	v = strings.Join(strings.Fields(v), " ")
	if r := []rune(v); len(r) > maxCell {
		return string(r[:maxCell-1]) + "…"
	}
	return v
}

// pointerCell names the whole object, whose pointer is empty: a deleted
// object, or one the audit log says was written.
func pointerCell(p string) string {
	if p == refluxv1.WholeObjectPointer {
		return "(object)"
	}
	return p
}

// ruleCell names the policy's defaults where no rule of its own matched.
func ruleCell(r string) string {
	if r == "" {
		return "(defaults)"
	}
	return r
}

func originCell(f diffField) string {
	switch {
	case f.Origin != "":
		return f.Origin
	case f.Refused != "" && f.EditAt != "":
		return "refused " + f.Refused + ", edit " + f.EditAt
	case f.Refused != "":
		return "refused " + f.Refused
	}
	return "-"
}

// helmDiffReport is what `reflux diff helmrelease` found.
type helmDiffReport struct {
	HelmRelease string `json:"helmRelease"`
	// Release is the Helm release compared, <namespace>/<name>.v<version>,
	// and Chart its chart's name and version.
	Release string `json:"release"`
	Chart   string `json:"chart"`
	// Mode is the HelmRelease's spec.driftDetection.mode.
	Mode     string           `json:"driftDetection"`
	Objects  []helmObjectDiff `json:"-"`
	Compared int              `json:"compared"`
}

// helmObjectDiff is one drifted object of a release, printed as one JSON
// line.
type helmObjectDiff struct {
	HelmRelease string          `json:"helmRelease"`
	Object      string          `json:"object"`
	APIVersion  string          `json:"apiVersion"`
	Fields      []helmDiffField `json:"fields"`
	// RevertedAt says when helm-controller takes the live values back:
	// Reconcile (drift correction), AfterHold, or Upgrade.
	RevertedAt string `json:"revertedAt"`
	// Excluded says why helm-controller's drift detection leaves the
	// object out; "" when it does not.
	Excluded string `json:"excluded,omitempty"`
}

// helmDiffField is one drifted field of a release's object, traced
// through the chart.
type helmDiffField struct {
	Pointer string `json:"pointer"`
	Change  string `json:"change"`
	Live    string `json:"liveValue,omitempty"`
	// Chart is the value the release renders, as helm-controller's
	// correction would write it.
	Chart string `json:"chartValue,omitempty"`
	// Kind is where the value comes from (reverse/chart.Kind): values,
	// chart-default, template-literal or computed.
	Kind string `json:"kind,omitempty"`
	// Keys are the values keys that change the field.
	Keys []string `json:"valuesKeys,omitempty"`
	// Origin is FILE:LINE:COL of the values key in Git; Refused says why
	// there is none, and EditAt where to add the key instead.
	Origin  string `json:"origin,omitempty"`
	Refused string `json:"refused,omitempty"`
	EditAt  string `json:"editAt,omitempty"`
	// Template is the chart template's FILE:LINE that reads the key, or
	// holds the literal.
	Template string `json:"template,omitempty"`
	// HelmReverts is true when helm-controller's next reconcile puts the
	// chart's value back (drift correction enabled).
	HelmReverts bool `json:"helmReverts"`
	// Rule, Action and Severity are the classification by the policy that
	// governs the Kustomization applying the HelmRelease (its defaults
	// when none does), as a record of the field would carry.
	Rule     string `json:"rule,omitempty"`
	Action   string `json:"action,omitempty"`
	Severity string `json:"severity,omitempty"`
}

// drifted counts the drifted objects and fields.
func (r helmDiffReport) drifted() (objects, fields int) {
	return countDrift(r.Objects, func(o helmObjectDiff) int { return len(o.Fields) })
}

// printHelmDiff writes the report as printDiff does.
func printHelmDiff(w io.Writer, asJSON bool, r helmDiffReport) error {
	if asJSON {
		return jsonLines(w, r.Objects)
	}
	mode := r.Mode
	if mode == "" {
		mode = "disabled"
	}
	fmt.Fprintf(w, "# HelmRelease %s, release %s (chart %s) against the live cluster, drift detection %s\n",
		r.HelmRelease, r.Release, r.Chart, mode)
	objects, fields := r.drifted()
	if objects == 0 {
		_, err := fmt.Fprintf(w, "# no drift in %d object(s)\n", r.Compared)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tFIELD\tCHANGE\tLIVE\tCHART\tVALUES KEY\tORIGIN\tTEMPLATE\tREVERTED AT\tRULE\tACTION")
	for _, o := range r.Objects {
		for _, f := range o.Fields {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Object, pointerCell(f.Pointer), f.Change,
				cell(f.Live), cell(f.Chart), keysCell(f), helmOriginCell(f), cell(f.Template), o.RevertedAt,
				ruleCell(f.Rule), f.Action+" "+f.Severity)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "# %d field(s) drifted in %d of %d object(s)\n", fields, objects, r.Compared)
	for _, o := range r.Objects {
		if o.Excluded != "" && err == nil {
			_, err = fmt.Fprintf(w, "# %s: helm-controller's drift detection leaves it out (%s)\n", o.Object, o.Excluded)
		}
	}
	return err
}

// keysCell names the values keys of a field, or its kind when no key
// sets it.
func keysCell(f helmDiffField) string {
	switch {
	case len(f.Keys) > 0 && f.Kind == "computed":
		return "computed: " + strings.Join(f.Keys, "+")
	case len(f.Keys) > 0:
		return strings.Join(f.Keys, ",")
	case f.Kind != "":
		return f.Kind
	}
	return "-"
}

// helmOriginCell is the values line, or why there is none.
func helmOriginCell(f helmDiffField) string {
	switch {
	case f.Origin != "":
		return f.Origin
	case f.Refused != "":
		kind, _, _ := strings.Cut(f.Refused, ":")
		if f.EditAt != "" {
			return kind + " (add at " + f.EditAt + ")"
		}
		return kind
	}
	return "-"
}
