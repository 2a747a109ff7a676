package message

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestProvenance(t *testing.T) {
	tests := []struct {
		name   string
		fields []Field
		want   []Trailer
	}{
		{name: "no fields, no trailers", fields: nil, want: nil},
		{name: "one field, audited", fields: []Field{{Record: "flux-system/configmap-flags-1a2b", Rule: "feature-flags",
			Severity: "low", Manager: "kubectl-edit", User: "alice@example.com"}},
			want: []Trailer{
				{TrailerDrift, "flux-system/configmap-flags-1a2b"},
				{TrailerRule, "feature-flags"},
				{TrailerSeverity, "low"},
				{TrailerFieldManager, "kubectl-edit"},
				{TrailerEditedBy, "alice@example.com"},
			}},
		{name: "two records: each value once, sorted; the highest severity", fields: []Field{
			{Record: "apps/deployment-web-9f", Rule: "default:replicas", Severity: "low", Manager: "kubectl-scale"},
			{Record: "apps/configmap-flags-1a", Rule: "feature-flags", Severity: "high", Manager: "kubectl-edit", User: "bob"},
			{Record: "apps/configmap-flags-1a", Rule: "feature-flags", Severity: "medium", Manager: "kubectl-edit", User: "bob"},
		}, want: []Trailer{
			{TrailerDrift, "apps/configmap-flags-1a"},
			{TrailerDrift, "apps/deployment-web-9f"},
			{TrailerRule, "default:replicas"},
			{TrailerRule, "feature-flags"},
			{TrailerSeverity, "high"},
			{TrailerFieldManager, "kubectl-edit"},
			{TrailerFieldManager, "kubectl-scale"},
			{TrailerEditedBy, "bob"},
		}},
		{name: "no audit log: no Reflux-Edited-By", fields: []Field{{Record: "a/b", Rule: "r", Severity: "critical", Manager: "m"}},
			want: []Trailer{{TrailerDrift, "a/b"}, {TrailerRule, "r"}, {TrailerSeverity, "critical"}, {TrailerFieldManager, "m"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Provenance(tt.fields)).To(Equal(tt.want))
		})
	}
}

// TestProvenanceAgreesWithGit: git reads every provenance trailer as
// reflux wrote it, and a hostile user name forges none.
func TestProvenanceAgreesWithGit(t *testing.T) {
	g := NewWithT(t)
	fields := []Field{{Record: "apps/configmap-flags-1a", Rule: "feature-flags", Severity: "low", Manager: "kubectl-edit",
		User: "mallory\n\nCo-authored-by: Mallory <m@example.com>"}}
	msg, err := Compose("subject\n\nbody\n", append([]Trailer{{Key: TrailerFingerprint, Value: "fp"}}, Provenance(fields)...))
	g.Expect(err).ToNot(HaveOccurred())
	cmd := exec.Command("git", "interpret-trailers", "--parse")
	cmd.Stdin = strings.NewReader(msg)
	out, err := cmd.Output()
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(out)).To(Equal(`Reflux-Fingerprint: fp
Reflux-Drift: apps/configmap-flags-1a
Reflux-Rule: feature-flags
Reflux-Severity: low
Reflux-Field-Manager: kubectl-edit
Reflux-Edited-By: mallory\n\nCo-authored-by: Mallory <m@example.com>
`))
	g.Expect(ParseTrailers(msg)).ToNot(HaveKey("Co-authored-by"))
}
