package message

import (
	"slices"
	"strings"
)

// Provenance trailers say where a commit's change came from: which Drift
// records it carries, which rules classified them and how severe the
// highest is, and who made the live change. Their format is documented in
// docs/commit-trailers.md; tools parse them with git interpret-trailers,
// so a key is never renamed and a value never changes shape.
//
// The person who edited the cluster did not author the commit, so they
// are named in Reflux-Edited-By and never in Co-authored-by, which forges
// read as authorship.
const (
	TrailerDrift        = "Reflux-Drift"
	TrailerRule         = "Reflux-Rule"
	TrailerSeverity     = "Reflux-Severity"
	TrailerFieldManager = "Reflux-Field-Manager"
	TrailerEditedBy     = "Reflux-Edited-By"
)

// severityRank orders the policy's severities; an unknown one ranks below
// them all.
var severityRank = map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}

// Provenance returns the provenance trailers of fields: one Reflux-Drift
// per record, one Reflux-Rule per rule, the highest Reflux-Severity, one
// Reflux-Field-Manager per field manager and one Reflux-Edited-By per
// audited user. Values are sorted and unique, so the same fields always
// give the same trailers and an unchanged drift set commits the same
// message. A key with no value is left out.
func Provenance(fields []Field) []Trailer {
	var records, rules, managers, users []string
	severity := ""
	for _, f := range fields {
		records = append(records, f.Record)
		rules = append(rules, f.Rule)
		managers = append(managers, f.Manager)
		users = append(users, f.User)
		if severityRank[strings.ToLower(f.Severity)] > severityRank[strings.ToLower(severity)] {
			severity = f.Severity
		}
	}
	var out []Trailer
	out = appendEach(out, TrailerDrift, records)
	out = appendEach(out, TrailerRule, rules)
	out = appendEach(out, TrailerSeverity, []string{severity})
	out = appendEach(out, TrailerFieldManager, managers)
	return appendEach(out, TrailerEditedBy, users)
}

// appendEach appends one trailer of key per distinct non-empty value, in
// sorted order.
func appendEach(out []Trailer, key string, values []string) []Trailer {
	values = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return strings.TrimSpace(v) == "" })
	slices.Sort(values)
	for _, v := range slices.Compact(values) {
		out = append(out, Trailer{Key: key, Value: v})
	}
	return out
}
