package monitoring

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestUnexportedReferences shows the check catches each way an expression
// can name what reflux does not export, and passes what it does.
func TestUnexportedReferences(t *testing.T) {
	ex := exported{
		"reflux_drift_fields":                      {"namespace", "kustomization", "team", "kind", "severity", "action"},
		"reflux_writeback_total":                   {"result"},
		"reflux_writeback_duration_seconds_bucket": {"le"},
	}
	tests := []struct {
		name, expr string
		problems   []string
		parseErr   bool
	}{
		{"exported metric and labels", `sum by (team) (reflux_drift_fields{severity="critical"})`, nil, false},
		{"histogram bucket by le", `histogram_quantile(0.9, sum by (le) (rate(reflux_writeback_duration_seconds_bucket[5m])))`, nil, false},
		{"a metric by __name__", `{__name__="reflux_writeback_total", result="GitError"}`, nil, false},
		{"no such metric", `sum(reflux_drift_field)`, []string{`metric "reflux_drift_field" is not exported`}, false},
		{"no such label in a matcher", `reflux_writeback_total{namespace="shop"}`, []string{`metric "reflux_writeback_total" has no label "namespace"`}, false},
		{"target labels are not reflux's", `reflux_drift_fields{job="reflux"}`, []string{`metric "reflux_drift_fields" has no label "job"`}, false},
		{"no such label to group by", `sum by (result) (reflux_drift_fields)`, []string{`aggregation by "result": metric "reflux_drift_fields" has no such label`}, false},
		{"no such label to match on", `reflux_drift_fields / on (result) reflux_writeback_total`,
			[]string{`vector matching by "result": metric "reflux_drift_fields" has no such label`}, false},
		{"not PromQL", `sum(reflux_drift_fields`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := unexportedReferences(tt.expr, ex)
			if tt.parseErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.problems == nil {
				g.Expect(got).To(BeEmpty())
			} else {
				g.Expect(got).To(Equal(tt.problems))
			}
		})
	}
}

// TestKitExpressionsParse reads every expression of the dashboard and the
// rules, with Grafana's variables stood in, and parses each.
func TestKitExpressionsParse(t *testing.T) {
	g := NewWithT(t)
	exprs := kitExpressions(t)
	var wheres []string
	for _, x := range exprs {
		_, err := unexportedReferences(x.expr, exported{})
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", x.where, x.expr)
		wheres = append(wheres, x.where)
	}
	g.Expect(wheres).To(ContainElements(`variable "team"`, `variable "namespace"`,
		"group reflux.drift rule RefluxCriticalDriftOpen", "group reflux.drift rule RefluxDriftUnresolved",
		"group reflux.writeback rule RefluxWriteBackFailing"))
}
