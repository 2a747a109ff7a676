package classify

import refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"

var severityRank = map[refluxv1.Severity]int{
	refluxv1.SeverityLow: 1, refluxv1.SeverityMedium: 2, refluxv1.SeverityHigh: 3, refluxv1.SeverityCritical: 4,
}

var actionRank = map[refluxv1.Action]int{
	refluxv1.IgnoreAction: 1, refluxv1.AlertAction: 2, refluxv1.MergeAction: 3,
}

// MaxSeverity returns the more severe of a and b.
func MaxSeverity(a, b refluxv1.Severity) refluxv1.Severity {
	if severityRank[b] > severityRank[a] {
		return b
	}
	return a
}

// StrongestAction returns the action that asks most of reflux: Merge, then
// Alert, then Ignore. A record's action is its strongest field's.
func StrongestAction(a, b refluxv1.Action) refluxv1.Action {
	if actionRank[b] > actionRank[a] {
		return b
	}
	return a
}
