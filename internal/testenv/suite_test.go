package testenv_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// env is shared by every test in the package: starting kube-apiserver and
// both controllers takes seconds, and the tests use distinct objects.
var (
	env   *testenv.Env
	audit *testenv.AuditRecorder
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(readyzAddrEnv); addr != "" {
		// Run as a child process by TestReadyOrRestart.
		os.Exit(serveReadyz(addr))
	}
	os.Exit(run(m))
}

// readyzAddrEnv makes the test binary a process serving /readyz on the
// address it names (process_test.go).
const readyzAddrEnv = "TESTENV_SERVE_READYZ"

// serveReadyz serves /readyz on addr, or prints why it cannot listen and
// fails, as a controller does.
func serveReadyz(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println(http.Serve(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	return 1
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(context.Background(), testenv.Options{AuditWebhook: &testenv.AuditWebhook{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	audit, err = testenv.StartAuditRecorder(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer audit.Close() //nolint:errcheck // test teardown
	code := m.Run()
	if code != 0 {
		if err := env.DumpLogs(os.Stdout, 256<<10); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}
