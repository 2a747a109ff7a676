package message

import "time"

// Data is what the commit message template receives.
type Data struct {
	// Kustomization is "<namespace>/<name>" of the Flux Kustomization.
	Kustomization string
	// Kind is "merge" for changes reflux proposes to merge and "alert" for
	// changes that need a human decision.
	Kind string
	// NeedsDecision is true for Alert-kind changes.
	NeedsDecision bool
	// SourceBranch is the branch Flux applies from.
	SourceBranch string
	// Fingerprint identifies the drift set.
	Fingerprint string
	// Fields lists every drifted value the commit writes back.
	Fields []Field
}

// Field is one drifted value.
type Field struct {
	// Object names the object, e.g. "apps/v1/Deployment apps/web".
	Object string
	// Pointer is the JSON pointer of the field, e.g. "/spec/replicas".
	Pointer string
	// GitValue is the value rendered from Git, as YAML flow text.
	GitValue string
	// LiveValue is the value found in the cluster, as YAML flow text.
	LiveValue string
	// File and Line locate the value in the source repository.
	File string
	Line int
	// ValuesKey and Template are set for a field a Helm chart rendered:
	// the values key the change sets at File:Line, and the chart's
	// template (FILE:LINE) that renders it.
	ValuesKey string
	Template  string
	// LastModifier is the field manager or user that last wrote the field.
	LastModifier string
	// FirstSeen is when reflux first saw the drift.
	FirstSeen time.Time
	// Severity is the classification given by the drift policy.
	Severity string
	// Record is "<namespace>/<name>" of the Drift record the field
	// belongs to.
	Record string
	// Rule names the policy rule that classified the field, such as
	// "feature-flags" or "default:replicas".
	Rule string
	// Manager is the field manager of the live change (managedFields).
	Manager string
	// User is the authenticated user the audit log names for the live
	// change; empty when the audit log did not say.
	User string
}

// Origin returns "file:line", or just the file when the line is unknown.
func (f Field) Origin() string {
	if f.File == "" {
		return "unknown"
	}
	if f.Line <= 0 {
		return f.File
	}
	return f.File + ":" + itoa(f.Line)
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
