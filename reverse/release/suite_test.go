package release

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// shared is the environment the cluster tests share: kube-apiserver,
// etcd, the git server and the real source-controller and
// helm-controller v1.6.2 (testenv.Options.Helm). It starts at the first
// test that needs it, so the pure tests run without it.
var shared struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

// clusterEnv returns the shared environment, starting it on first use.
func clusterEnv(t *testing.T) *testenv.Env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd, source-controller and helm-controller")
	}
	shared.once.Do(func() {
		shared.env, shared.err = testenv.Start(context.Background(), testenv.Options{Helm: true})
	})
	if shared.err != nil {
		t.Fatalf("starting the test environment (run `make testbin`): %v", shared.err)
	}
	return shared.env
}

// TestMain stops the environment after the tests, printing every
// component's log first when a test failed.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		if code != 0 {
			if err := shared.env.DumpLogs(os.Stderr, 256<<10); err != nil {
				fmt.Fprintln(os.Stderr, "dumping logs:", err)
			}
		}
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test environment:", err)
			code = 1
		}
	}
	os.Exit(code)
}
