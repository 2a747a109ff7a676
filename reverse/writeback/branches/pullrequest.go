package branches

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// Labels reflux puts on its pull requests.
const (
	// LabelReflux marks every pull request reflux opened.
	LabelReflux = "reflux"
	// LabelNeedsDecision marks Alert pull requests, which reflux never
	// merges: a human decides.
	LabelNeedsDecision = "needs-decision"
	// labelSeverity prefixes the highest severity, as severity/critical.
	labelSeverity = "severity/"
)

// severityRank orders severities from lowest to highest.
var severityRank = map[refluxv1.Severity]int{
	refluxv1.SeverityLow: 1, refluxv1.SeverityMedium: 2, refluxv1.SeverityHigh: 3, refluxv1.SeverityCritical: 4,
}

// pullRequest is the pull request a branch carrying grp's fields asks
// for: a title naming the Kustomization and what changed, a body with one
// table row per field, reflux's labels, and the reviewers and assignees of
// the policy or of the rules that matched.
func pullRequest(set reverse.DriftSet, grp group, head, commit string) forge.Request {
	pr := set.Policy.Spec.Git.PullRequest
	req := forge.Request{Head: head, Commit: commit, Base: set.Source.Branch, Title: prTitle(set.Kustomization, grp),
		Body: prBody(set, grp), Draft: grp.action == refluxv1.AlertAction, Proposals: proposals(set.Records, head)}
	req.Labels = []string{LabelReflux}
	// The labels that say what the branch carries follow it: a severity
	// that left with a dismissed record, or a decision no longer needed,
	// leaves the pull request too. Humans' labels stay.
	req.Exclusive = []string{LabelNeedsDecision, labelSeverity}
	if req.Draft {
		req.Labels = append(req.Labels, LabelNeedsDecision)
	}
	if sev := highest(grp); sev != "" {
		req.Labels = append(req.Labels, labelSeverity+string(sev))
	}
	req.Reviewers, req.Assignees = pr.Reviewers, pr.Assignees
	if o := overrides(set.Policy.Spec.Rules, grp); o != nil {
		req.Reviewers, req.Assignees = o.Reviewers, o.Assignees
	}
	return req
}

// prTitle names the Kustomization and what changed: the field when there
// is one, else how many fields of which objects.
func prTitle(ks refluxv1.KustomizationRef, grp group) string {
	prefix := fmt.Sprintf("reflux: %s/%s", ks.Namespace, ks.Name)
	if grp.action == refluxv1.AlertAction {
		prefix += " needs a decision"
	}
	if len(grp.fields) == 1 {
		f := grp.fields[0]
		return fmt.Sprintf("%s: %s %s %s", prefix, strings.ToLower(string(f.field.ChangeType)), objectName(f.record), f.field.Pointer)
	}
	var objects []string
	for _, f := range grp.fields {
		if n := objectName(f.record); !slices.Contains(objects, n) {
			objects = append(objects, n)
		}
	}
	sort.Strings(objects)
	if len(objects) > 3 {
		objects = append(objects[:3], fmt.Sprintf("%d more", len(objects)-3))
	}
	return fmt.Sprintf("%s: %d fields of %s", prefix, len(grp.fields), strings.Join(objects, ", "))
}

// prBody tells reviewers why each value is what it is. Values come from
// the records, where Secret values are already masked.
func prBody(set reverse.DriftSet, grp group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reflux found live changes to objects the Kustomization `%s/%s` applies (revision `%s`).\n\n",
		set.Kustomization.Namespace, set.Kustomization.Name, set.Revision)
	if grp.action == refluxv1.AlertAction {
		b.WriteString("**These changes need a decision.** reflux never merges this pull request: merge it to keep the " +
			"live values, or close it to let Flux restore Git.\n\n")
	} else {
		b.WriteString("Merge to keep the live values in Git; close to let Flux restore Git.\n\n")
	}
	b.WriteString("| Object | Field | Git → live | Origin | Modified by | First seen | Severity | Rule |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, mf := range grp.messageFields() {
		origin := "—"
		switch {
		case mf.File != "" && mf.Line > 0:
			origin = fmt.Sprintf("`%s:%d`", mf.File, mf.Line)
		case mf.File != "":
			// A generator literal or a patch target has no line of its own.
			origin = "`" + mf.File + "`"
		}
		if mf.ValuesKey != "" {
			origin += fmt.Sprintf(", values key `%s`", cell(mf.ValuesKey))
			if mf.Template != "" {
				origin += fmt.Sprintf(" (chart template `%s`)", cell(mf.Template))
			}
		}
		mod := mf.LastModifier
		if mod == "" {
			mod = "—"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s → %s | %s | %s | %s | %s | %s |\n", cell(mf.Object), cell(mf.Pointer),
			value(mf.GitValue), value(mf.LiveValue), origin, cell(mod), mf.FirstSeen.UTC().Format("2006-01-02 15:04:05Z"),
			mf.Severity, cell(ruleOf(grp, mf.Pointer)))
	}
	if len(grp.refused) > 0 {
		fmt.Fprintf(&b, "\nNot written: %s\n", cell(grp.refusals()))
	}
	return b.String()
}

func ruleOf(grp group, pointer string) string {
	for _, f := range grp.fields {
		if f.field.Pointer == pointer && f.field.Rule != "" {
			return f.field.Rule
		}
	}
	return "—"
}

func value(v string) string {
	if v == "" {
		return "(none)"
	}
	return "`" + cell(v) + "`"
}

// cell keeps a value inside its table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

func objectName(d *refluxv1.Drift) string {
	return d.Spec.Object.Kind + "/" + d.Spec.Object.Name
}

func highest(grp group) refluxv1.Severity {
	var out refluxv1.Severity
	for _, f := range grp.fields {
		if severityRank[f.field.Severity] > severityRank[out] {
			out = f.field.Severity
		}
	}
	return out
}

// overrides returns the merged reviewers and assignees of the rules that
// matched the group's fields and say whom to ask, or nil when none does.
func overrides(rules []refluxv1.Rule, grp group) *refluxv1.PullRequestOverride {
	var out *refluxv1.PullRequestOverride
	for i, r := range rules {
		if r.PullRequest == nil || !matchedRule(grp, r.Name, i) {
			continue
		}
		if out == nil {
			out = &refluxv1.PullRequestOverride{}
		}
		out.Reviewers = union(out.Reviewers, r.PullRequest.Reviewers)
		out.Assignees = union(out.Assignees, r.PullRequest.Assignees)
	}
	return out
}

// matchedRule reports whether a field of grp was classified by the rule
// named name, or by rules[i] when the rule has no name (classify's names).
func matchedRule(grp group, name string, i int) bool {
	if name == "" {
		name = fmt.Sprintf("rules[%d]", i)
	}
	for _, f := range grp.fields {
		if f.field.Rule == name {
			return true
		}
	}
	return false
}

func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}
