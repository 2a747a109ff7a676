package monitoring

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// The environment starts only for the test that scrapes reflux, so the
// promtool checks run in a second on their own.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if code != 0 {
			_ = env.DumpLogs(os.Stdout, 256<<10)
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// liveEnv starts the shared environment once: real kube-apiserver, etcd,
// Flux controllers and git server.
func liveEnv(t *testing.T) *testenv.Env {
	t.Helper()
	envOnce.Do(func() {
		scheme, err := manager.NewScheme()
		if err != nil {
			envErr = err
			return
		}
		env, envErr = testenv.Start(context.Background(), testenv.Options{Scheme: scheme})
	})
	if envErr != nil {
		t.Fatalf("starting the environment: %v", envErr)
	}
	return env
}
