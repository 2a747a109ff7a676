package drift

import (
	"context"
	"testing"
)

// BenchmarkDetect measures one Detect of a drifted Deployment against the
// real apiserver, and reports the API requests each call makes, which must
// stay constant (one) however many objects change.
func BenchmarkDetect(b *testing.B) {
	counted, requests := countingClient(b)
	d, err := New(counted)
	if err != nil {
		b.Fatal(err)
	}
	git := object(b, newNamespace(b), deploymentYAML)
	fluxApply(b, git)
	edit(b, git, "kubectl-edit", func(u map[string]any) { set(b, u, int64(5), "spec", "replicas") })
	in := Input{Desired: git, Live: get(b, git)}
	ctx := context.Background()
	// Warm the client's REST mapper, which discovers each group once.
	if _, err := d.Detect(ctx, in); err != nil {
		b.Fatal(err)
	}
	requests.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := d.Detect(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Fields) != 1 {
			b.Fatalf("got %d fields, want 1", len(res.Fields))
		}
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
}
