package chart

import (
	"os"
	"testing"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// testRelease is the release the tests render for.
var testRelease = Release{Name: "shop", Namespace: "prod"}

// deployment is the webapp chart's Deployment as rendered for testRelease.
var deployment = ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "shop-webapp"}

func loadChart(t testing.TB, name string) *chartv2.Chart {
	t.Helper()
	ch, err := Load("testdata/charts/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// releaseValues are what the webapp release's HelmRelease sets.
func releaseValues(t testing.TB) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("testdata/values/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseValues(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func analyze(t testing.TB, chart string, values map[string]any) *Analysis {
	t.Helper()
	a, err := Analyze(loadChart(t, chart), values, testRelease)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func paths(keys []Key) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, k.Path)
	}
	return out
}
