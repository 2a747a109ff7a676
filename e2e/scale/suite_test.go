package scale

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// refluxBin is the binary every case runs: built from this work tree with
// the Makefile's flags when benchmarks start, so the numbers are never a
// stale bin/reflux's; REFLUX_SCALE_BIN=<path> measures another build, e.g.
// one of an earlier commit to compare against.
var refluxBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run builds reflux only when a benchmark is asked for; environments are
// started per case by the benchmark itself. Without -bench only the
// fixture's tests run, in seconds.
func run(m *testing.M) int {
	flag.Parse()
	// The benchmark's own watches log through controller-runtime; their
	// chatter is not worth reading beside the figures.
	ctrllog.SetLogger(logr.Discard())
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		return m.Run()
	}
	refluxBin = os.Getenv("REFLUX_SCALE_BIN")
	if refluxBin == "" {
		dir, err := os.MkdirTemp("", "reflux-scale-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir) //nolint:errcheck // scratch space
		if refluxBin, err = buildReflux(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// buildReflux builds the module's main package with make build's flags.
func buildReflux(dir string) (string, error) {
	bin := filepath.Join(dir, "reflux")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "github.com/reflux-dev/reflux")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building reflux: %w\n%s", err, out)
	}
	return bin, nil
}

// logTail bounds each log printed after a failed case.
const logTail = 64 << 10

// startEnv starts a fresh environment for one case. Its cleanup keeps the
// logs when REFLUX_SCALE_LOGS is set, prints their ends when the case
// failed, and stops everything; reflux's own cleanup, registered later,
// has stopped it by then.
func startEnv(b *testing.B, c scaleCase) *testenv.Env {
	b.Helper()
	scheme, err := manager.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	env, err := testenv.Start(context.Background(), testenv.Options{
		Scheme: scheme, StartTimeout: 2 * time.Minute, WaitTimeout: fluxApplyTimeout,
	})
	if err != nil {
		b.Fatalf("starting the environment: %v", err)
	}
	b.Cleanup(func() {
		logs := append(env.LogPaths(), refluxLog(env))
		if dir := os.Getenv("REFLUX_SCALE_LOGS"); dir != "" {
			if err := keepLogs(filepath.Join(dir, strings.NewReplacer("/", "_", "=", "-").Replace(c.name())), logs); err != nil {
				b.Errorf("keeping logs: %v", err)
			}
		}
		if b.Failed() {
			for _, p := range logs {
				printTail(p)
			}
		}
		if err := env.Stop(); err != nil {
			b.Errorf("stopping the environment: %v", err)
		}
	})
	return env
}

// refluxLog is where StartReflux's default name puts reflux's log.
func refluxLog(env *testenv.Env) string { return filepath.Join(env.Dir, "reflux.log") }

// keepLogs copies the logs that exist into dir.
func keepLogs(dir string, logs []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// printTail prints the end of a log to stdout, where go test shows it
// beside the failure.
func printTail(path string) {
	f, err := os.Open(path)
	if err != nil {
		return // a component that never started has no log
	}
	defer f.Close() //nolint:errcheck // read-only
	if info, err := f.Stat(); err == nil && info.Size() > logTail {
		if _, err := f.Seek(-logTail, io.SeekEnd); err != nil {
			return
		}
	}
	fmt.Printf("===== %s (end) =====\n", filepath.Base(path))
	_, _ = io.Copy(os.Stdout, f) // best effort, after the failure is reported
}
