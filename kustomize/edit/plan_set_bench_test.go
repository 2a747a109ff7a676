package edit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPlanSet compares the builds a write-back attempt pays for its
// edits: PlanSet against the render the caller already has, and Plan
// once per field as write-back did (each Plan renders before and after).
// builds/op is the number that matters: on a tree of 10,000 objects each
// build takes minutes, so time/op on this small tree understates the gap.
func BenchmarkPlanSet(b *testing.B) {
	for _, n := range []int{1, 5} {
		changes := prodChanges[:n]
		b.Run(fmt.Sprintf("PlanSet/changes=%d", n), func(b *testing.B) {
			opts, builds := benchOptions(b)
			before, err := NewBefore(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			start := builds.builds()
			b.ResetTimer()
			for range b.N {
				res, err := PlanSet(context.Background(), opts, before, changes)
				if err != nil || len(res.Planned) != n {
					b.Fatalf("planned %v: %v", res, err)
				}
			}
			b.ReportMetric(float64(builds.builds()-start)/float64(b.N), "builds/op")
		})
		b.Run(fmt.Sprintf("Plan-per-field/changes=%d", n), func(b *testing.B) {
			opts, builds := benchOptions(b)
			for range b.N {
				for _, ch := range changes {
					if _, err := Plan(context.Background(), opts, ch); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(builds.builds())/float64(b.N), "builds/op")
		})
	}
}

// benchOptions is prodOptions with the base's commonLabels written as the
// equivalent labels entry: kustomize warns about commonLabels on stderr
// at every build, which would split the benchmark's result lines.
func benchOptions(b *testing.B) (Options, *counter) {
	opts, builds := prodOptions(b)
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n  - service.yaml\n" +
		"labels:\n  - pairs:\n      app.kubernetes.io/name: podinfo\n    includeSelectors: true\n"
	if err := os.WriteFile(filepath.Join(opts.Build.Root, "base", "kustomization.yaml"), []byte(k), 0o644); err != nil {
		b.Fatal(err)
	}
	return opts, builds
}
