package sidebyside

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// refluxBin is built from this work tree when benchmarks start, so the
// figures are never a stale bin/reflux's.
var refluxBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run builds reflux only when a benchmark is asked for.
func run(m *testing.M) int {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "reflux-sidebyside-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir) //nolint:errcheck // scratch space
	refluxBin = filepath.Join(dir, "reflux")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", refluxBin, "github.com/reflux-dev/reflux")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building reflux: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// startEnv starts a fresh environment for one case; on failure its
// cleanup prints the ends of the logs.
func startEnv(b *testing.B) *testenv.Env {
	b.Helper()
	scheme, err := manager.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	env, err := testenv.Start(context.Background(), testenv.Options{
		Scheme: scheme, StartTimeout: 2 * time.Minute, WaitTimeout: 20 * time.Minute,
	})
	if err != nil {
		b.Fatalf("starting the environment: %v", err)
	}
	b.Cleanup(func() {
		if b.Failed() {
			_ = env.DumpLogs(os.Stdout, 64<<10)
			_ = testenv.DumpFiles(os.Stdout, 64<<10, filepath.Join(env.Dir, "reflux.log"))
		}
		if err := env.Stop(); err != nil {
			b.Errorf("stopping the environment: %v", err)
		}
	})
	return env
}
