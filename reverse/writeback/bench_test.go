package writeback

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
)

// BenchmarkWriteBack measures request-to-branch-pushed on a loopback
// gittestserver (HTTP, basic auth) hosting a 1,000-file repository, with
// the clone cache warm as it is in a running controller. It reports the
// median and p95 per write-back and the cold first run (clone included).
func BenchmarkWriteBack(b *testing.B) {
	srv := gitserver.StartHTTP(b)
	files := make(map[string]string, 1000)
	for i := range 1000 {
		files[fmt.Sprintf("apps/app-%03d/deploy.yaml", i)] = fmt.Sprintf("name: app-%03d\nreplicas: 1\n", i)
	}
	srv.Seed(b, repoName, "main", files)
	auth, err := git.NewAuth(srv.URL(repoName), srv.SecretData)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := New(b.TempDir(), WithInsecureHTTP())
	if err != nil {
		b.Fatal(err)
	}
	run := func(i int) time.Duration {
		path := fmt.Sprintf("apps/app-%03d/deploy.yaml", i%1000)
		req := Request{
			RepoURL: srv.URL(repoName), Auth: auth, SourceBranch: "main",
			Kustomization: Kustomization{Namespace: "bench", Name: fmt.Sprintf("ks-%d", i)},
			Fingerprint:   fmt.Sprintf("bench-%d", i), Author: reflux,
			Apply: func(dir string) ([]string, error) {
				content := fmt.Appendf(nil, "name: app-%03d\nreplicas: %d\n", i%1000, i+2)
				return []string{path}, os.WriteFile(filepath.Join(dir, path), content, 0o644)
			},
		}
		start := time.Now()
		res, err := eng.Run(context.Background(), req)
		took := time.Since(start)
		if err != nil || res.Outcome != BranchPushed {
			b.Fatalf("run %d: %v %+v", i, err, res)
		}
		return took
	}

	cold := run(-1 + 1000000)
	durations := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		durations = append(durations, run(i))
	}
	slices.Sort(durations)
	b.ReportMetric(ms(durations[len(durations)/2]), "p50-ms")
	b.ReportMetric(ms(durations[len(durations)*95/100]), "p95-ms")
	b.ReportMetric(ms(cold), "cold-ms")
}

func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
