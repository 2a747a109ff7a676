package chart

import (
	"testing"

	"github.com/reflux-dev/reflux/internal/charttest"
)

// writeBenchChart writes charttest's chart of n components and returns
// its directory.
func writeBenchChart(b testing.TB, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := charttest.Write(dir, n); err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchComponents makes about 300 values keys.
const benchComponents = charttest.Components

// benchValues are a release's own: a few keys of a few components.
func benchValues() map[string]any {
	return map[string]any{"components": map[string]any{
		"c01": map[string]any{"replicas": 3},
		"c07": map[string]any{"image": map[string]any{"tag": "2.0.0"}, "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}},
	}}
}

func BenchmarkMap(b *testing.B) {
	ch, err := Load(writeBenchChart(b, benchComponents))
	if err != nil {
		b.Fatal(err)
	}
	var renders, fields, keys int
	for b.Loop() {
		a, err := Analyze(ch, benchValues(), testRelease)
		if err != nil {
			b.Fatal(err)
		}
		m := a.Map()
		renders, fields, keys = m.Renders(), m.Len(), len(a.leaves)
	}
	b.ReportMetric(float64(renders), "renders/op")
	b.ReportMetric(float64(fields), "fields/op")
	b.ReportMetric(float64(keys), "keys")
}

func BenchmarkFind(b *testing.B) {
	ch, err := Load(writeBenchChart(b, benchComponents))
	if err != nil {
		b.Fatal(err)
	}
	obj := ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "shop-c07"}
	var renders int
	for b.Loop() {
		a, err := Analyze(ch, benchValues(), testRelease)
		if err != nil {
			b.Fatal(err)
		}
		res, err := a.Find(obj, "/spec/template/spec/containers/0/resources/limits/memory")
		if err != nil {
			b.Fatal(err)
		}
		if res.Kind != KindValues {
			b.Fatalf("kind %s", res.Kind)
		}
		renders = a.Renders()
	}
	b.ReportMetric(float64(renders), "renders/op")
}

func BenchmarkRender(b *testing.B) {
	ch, err := Load(writeBenchChart(b, benchComponents))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Render(ch, benchValues(), testRelease); err != nil {
			b.Fatal(err)
		}
	}
}
