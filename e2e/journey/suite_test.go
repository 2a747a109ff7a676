package journey

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	timeout  = 2 * time.Minute
	interval = 100 * time.Millisecond

	// shardKey labels the fixtures whose reflux a test starts and kills
	// itself; the suite's reflux governs everything without it.
	shardKey = "reflux.dev/journey-shard"
	// aliceName is the on-call engineer, in testenv's break-glass group
	// rather than system:masters: only the harness's admin client is.
	aliceName = "alice@example.com"
)

var (
	env    *testenv.Env
	alice  testenv.User
	aliceC ctrlclient.Client
	// suiteReflux is the suite's reflux: the real binary as config/default's
	// ServiceAccount, its events sent to sink.
	suiteReflux *testenv.RefluxProcess
	sink        *eventSink
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	scheme, err := manager.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme, AuditWebhook: &testenv.AuditWebhook{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	sink = startEventSink()
	defer sink.Close()
	code := 1
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the journeys:", err)
	} else {
		code = m.Run()
	}
	logs := refluxLogs.all()
	if suiteReflux != nil {
		if err := suiteReflux.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code != 0 {
		_ = env.DumpLogs(os.Stdout, 256<<10)
		_ = testenv.DumpFiles(os.Stdout, 512<<10, logs...)
	}
	return code
}

// setup provisions alice and starts the suite's reflux, which installs
// config/default first.
func setup(ctx context.Context) error {
	var err error
	if alice, err = env.AddBreakGlassUser(ctx, aliceName); err != nil {
		return err
	}
	if aliceC, err = ctrlclient.New(alice.Config, ctrlclient.Options{Scheme: env.Scheme}); err != nil {
		return err
	}
	suiteReflux, err = startReflux(ctx, "reflux", "!"+shardKey,
		"--events-addr="+sink.URL(), "--audit-addr="+env.AuditWebhookAddr)
	return err
}

// startReflux runs bin/reflux as the installed ServiceAccount, governing
// what selector selects.
func startReflux(ctx context.Context, name, selector string, args ...string) (*testenv.RefluxProcess, error) {
	refluxLogs.add(filepath.Join(env.Dir, name+".log"))
	return testenv.StartReflux(ctx, env, testenv.RefluxOptions{Name: name, Args: append([]string{
		"--watch-label-selector=" + selector,
		"--log-level=debug",
		// The test git server speaks plain HTTP on loopback.
		"--insecure-allow-http",
		"--concurrent=2",
		"--artifact-retry-interval=2s",
		"--policy-retry-interval=2s",
	}, args...)})
}

// logList collects the log files of every reflux the suite started, to
// print when it fails.
type logList struct {
	mu    sync.Mutex
	paths []string
}

var refluxLogs logList

func (l *logList) add(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paths = append(l.paths, p)
}

func (l *logList) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.paths...)
}
