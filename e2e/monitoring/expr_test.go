package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// The kit under test, relative to this package.
var (
	dashboardPath = filepath.Join("..", "..", "config", "monitoring", "grafana", "reflux.json")
	rulesPath     = filepath.Join("..", "..", "config", "monitoring", "prometheus", "reflux-rules.yaml")
	rulesTestPath = filepath.Join("..", "..", "config", "monitoring", "prometheus", "reflux-rules.test.yaml")
)

// expression is one PromQL expression of the kit, named by where it is.
type expression struct {
	where, expr string
}

// grafanaVars stand in for the dashboard's variables so its queries parse
// as Grafana sends them: a regexp matching everything for the template
// variables, a duration for the interval variables.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "$__interval", "1m", "$__range", "1d",
	"$namespace", ".*", "$team", ".*",
)

// labelValuesQuery is a Grafana variable query, label_values(selector, label).
var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// dashboardExpressions reads every query of a Grafana dashboard: its
// panels' targets, rows' nested panels included, and its variables. A
// label_values variable becomes `count by (label) (selector)`, which
// names the same metric and label.
func dashboardExpressions(path string) ([]expression, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	var out []expression
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			for _, t := range p.Targets {
				out = append(out, expression{fmt.Sprintf("panel %q target %s", p.Title, t.RefID), grafanaVars.Replace(t.Expr)})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Query
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		s, _ := q.(string)
		m := labelValuesQuery.FindStringSubmatch(strings.TrimSpace(s))
		if m == nil {
			return nil, fmt.Errorf("variable %q: query %q is not label_values(selector, label)", v.Name, s)
		}
		out = append(out, expression{fmt.Sprintf("variable %q", v.Name), fmt.Sprintf("count by (%s) (%s)", m[2], m[1])})
	}
	return out, nil
}

type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// ruleGroups is the part of a PrometheusRule promtool reads: its spec is
// a Prometheus rules file.
type ruleGroups struct {
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert  string `json:"alert,omitempty"`
				Record string `json:"record,omitempty"`
				Expr   string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// ruleExpressions reads every rule's expression of a PrometheusRule, and
// returns its spec as a rules file for promtool.
func ruleExpressions(path string) ([]expression, []byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if obj["kind"] != "PrometheusRule" {
		return nil, nil, fmt.Errorf("%s: kind %v, want PrometheusRule", path, obj["kind"])
	}
	spec, err := yaml.Marshal(obj["spec"])
	if err != nil {
		return nil, nil, err
	}
	var rg ruleGroups
	if err := yaml.Unmarshal(raw, &rg); err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	var out []expression
	for _, g := range rg.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, expression{fmt.Sprintf("group %s rule %s%s", g.Name, r.Alert, r.Record), r.Expr})
		}
	}
	return out, spec, nil
}

// exported maps each series name a scrape exports to its label names. A
// histogram exports name_bucket (with le), name_sum and name_count.
type exported map[string][]string

// unexportedReferences parses expr and returns what it names that is not
// exported: a metric, a label a selector matches on, or a label an
// aggregation groups by or a binary operation matches on that none of the
// metrics beneath it carries. A parse error is returned as the error.
func unexportedReferences(expr string, ex exported) ([]string, error) {
	root, err := parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var problems []string
	parser.Inspect(root, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			problems = append(problems, selectorProblems(n, ex)...)
		case *parser.AggregateExpr:
			problems = append(problems, groupingProblems("aggregation", n.Grouping, n.Expr, ex)...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				problems = append(problems, groupingProblems("vector matching", n.VectorMatching.MatchingLabels, n.LHS, ex)...)
				problems = append(problems, groupingProblems("vector matching", n.VectorMatching.MatchingLabels, n.RHS, ex)...)
			}
		}
		return nil
	})
	sort.Strings(problems)
	return slices.Compact(problems), nil
}

func selectorProblems(s *parser.VectorSelector, ex exported) []string {
	name := s.Name
	for _, m := range s.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			name = m.Value
		}
	}
	have, ok := ex[name]
	if !ok {
		return []string{fmt.Sprintf("metric %q is not exported", name)}
	}
	var out []string
	for _, m := range s.LabelMatchers {
		if m.Name != labels.MetricName && !slices.Contains(have, m.Name) {
			out = append(out, fmt.Sprintf("metric %q has no label %q", name, m.Name))
		}
	}
	return out
}

// groupingProblems checks that every metric beneath expr carries each of
// the grouping labels.
func groupingProblems(what string, grouping []string, expr parser.Node, ex exported) []string {
	var out []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		s, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		have, ok := ex[s.Name]
		if !ok {
			return nil // reported by selectorProblems
		}
		for _, l := range grouping {
			if !slices.Contains(have, l) {
				out = append(out, fmt.Sprintf("%s by %q: metric %q has no such label", what, l, s.Name))
			}
		}
		return nil
	})
	return out
}
