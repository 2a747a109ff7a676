package origin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/reflux-dev/reflux/kustomize"
)

// writeLargeTree writes a base of n/2 Deployments and n/2 Services and an
// overlay with the usual transformers and a patch for every tenth Deployment.
func writeLargeTree(tb testing.TB, n int) string {
	tb.Helper()
	root := tb.TempDir()
	var base strings.Builder
	for i := 0; i < n/2; i++ {
		fmt.Fprintf(&base, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%[1]d
spec:
  replicas: 1
  selector:
    matchLabels: {app: app-%[1]d}
  template:
    metadata:
      labels: {app: app-%[1]d}
    spec:
      containers:
        - name: app
          image: example/app:1.0.%[1]d
          env:
            - name: INDEX
              value: "%[1]d"
---
apiVersion: v1
kind: Service
metadata:
  name: app-%[1]d
spec:
  selector: {app: app-%[1]d}
  ports:
    - port: 80
`, i)
	}
	var patches strings.Builder
	for i := 0; i < n/2; i += 10 {
		fmt.Fprintf(&patches, "  - patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata:\n        name: app-%d\n      spec:\n        replicas: 3\n", i)
	}
	files := map[string]string{
		"base/kustomization.yaml":    "resources:\n  - apps.yaml\n",
		"base/apps.yaml":             base.String(),
		"overlay/kustomization.yaml": "namespace: bench\nnamePrefix: prod-\ncommonLabels:\n  env: prod\nimages:\n  - name: example/app\n    newTag: 2.0.0\nresources:\n  - ../base\npatches:\n" + patches.String(),
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// benchSizes are the tree sizes issue 12 asks BenchmarkBuildIndex at.
var benchSizes = []int{1000, 10000}

// BenchmarkBuildIndex is what reflux trace costs: the Flux-faithful build
// plus the origin index over it (ns/op). Every iteration also times
// `kustomize build` of the same tree (krusty with kustomize's default
// options, in process, YAML out) outside the benchmark timer, so that a
// machine shared with other work loads both alike: kustomize-ns/op and
// ratio (index over kustomize; issue 12 sets at most 1.5) come from the
// same run.
func BenchmarkBuildIndex(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			root := writeLargeTree(b, n)
			opts := kustomize.BuildOptions{Root: root, Path: "overlay"}
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			var kust, index time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				took, size := kustomizeBuild(b, k, root)
				kust += took
				b.StartTimer()
				start := time.Now()
				idx, res, err := Build(context.Background(), opts)
				if err != nil || idx.ModelErr != nil {
					b.Fatal(err, idx.ModelErr)
				}
				index += time.Since(start)
				if len(res.Objects) != n || size != n {
					b.Fatalf("rendered %d objects, kustomize %d", len(res.Objects), size)
				}
			}
			b.ReportMetric(float64(kust.Nanoseconds())/float64(b.N), "kustomize-ns/op")
			b.ReportMetric(float64(index)/float64(kust), "ratio")
		})
	}
}

// BenchmarkTraceEveryLeaf is `reflux trace` for every leaf of a
// 5,000-object tree (issue 21): one build shared by all of them, then
// the origin of each leaf. As in BenchmarkBuildIndex, every iteration
// also times `kustomize build` of the same tree outside the timer, so
// the ratio (trace over kustomize; the target is at most 1.5)
// comes from one run under one load.
func BenchmarkTraceEveryLeaf(b *testing.B) {
	const n = 5000
	root := writeLargeTree(b, n)
	opts := kustomize.BuildOptions{Root: root, Path: "overlay"}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	var kust, trace time.Duration
	leaves := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		took, _ := kustomizeBuild(b, k, root)
		kust += took
		b.StartTimer()
		start := time.Now()
		idx, _, err := Build(context.Background(), opts)
		if err != nil || idx.ModelErr != nil {
			b.Fatal(err, idx.ModelErr)
		}
		leaves = 0
		for _, ref := range idx.Objects() {
			fields, err := idx.Fields(ref)
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range fields {
				if _, err := idx.Lookup(ref, f.Pointer); err != nil {
					b.Fatal(err)
				}
				leaves++
			}
		}
		trace += time.Since(start)
	}
	b.ReportMetric(float64(leaves), "leaves")
	b.ReportMetric(float64(kust.Nanoseconds())/float64(b.N), "kustomize-ns/op")
	b.ReportMetric(float64(trace)/float64(kust), "ratio")
}

// kustomizeBuild times `kustomize build` of root's overlay (krusty in
// process, YAML out), the benchmarks' yardstick, and returns how many
// objects it rendered.
func kustomizeBuild(b *testing.B, k *krusty.Kustomizer, root string) (time.Duration, int) {
	b.Helper()
	start := time.Now()
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, "overlay"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.AsYaml(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), m.Size()
}

func BenchmarkLookup(b *testing.B) {
	opts := kustomize.BuildOptions{Root: writeLargeTree(b, 1000), Path: "overlay"}
	idx, _, err := Build(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	refs := idx.Objects()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ref := refs[i%len(refs)]
		ptr := "/metadata/name"
		if ref.Kind == "Deployment" {
			ptr = "/spec/template/spec/containers/0/image"
		}
		if _, err := idx.Lookup(ref, ptr); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLargeTreeFullyMapped guards the benchmark tree: with only modelled
// features, no field may be refused.
func TestLargeTreeFullyMapped(t *testing.T) {
	idx, _, err := Build(context.Background(), kustomize.BuildOptions{Root: writeLargeTree(t, 40), Path: "overlay"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range idx.Objects() {
		fields, _ := idx.Fields(ref)
		for _, f := range fields {
			if f.Refused != "" {
				t.Errorf("%s %s refused: %s", ref, f.Pointer, f.Refused)
			}
		}
	}
}
