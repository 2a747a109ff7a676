package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// apiserverRequests reads the kube-apiserver's own request counter
// (apiserver_request_total) as cfg's user, summed by verb, resource and
// subresource, with dry runs apart: every client's requests, reflux's,
// Flux's and the benchmark's alike.
func apiserverRequests(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(cfg.Host, "/") + "/metrics"
	body, err := get(ctx, hc, url)
	if err != nil {
		return nil, err
	}
	defer body.Close() //nolint:errcheck // read-only
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	out := map[string]float64{}
	for _, s := range families["apiserver_request_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range s.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["verb"] == "WATCH" {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if l["dry_run"] != "" {
			key += " (dry run)"
		}
		out[key] += s.GetCounter().GetValue()
	}
	return out, nil
}

// requestCount is one line of requestsBetween.
type requestCount struct {
	what string
	n    float64
}

// requestsBetween is what the apiserver served between two readings of
// apiserverRequests, most first, leaving out what it served fewer than
// least of.
func requestsBetween(before, after map[string]float64, least float64) []requestCount {
	var out []requestCount
	for k, v := range after {
		if d := v - before[k]; d >= least {
			out = append(out, requestCount{k, d})
		}
	}
	slices.SortFunc(out, func(a, b requestCount) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.what, b.what)) })
	return out
}

func formatRequests(rs []requestCount) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s %.0f; ", r.what, r.n)
	}
	return strings.TrimSuffix(b.String(), "; ")
}
