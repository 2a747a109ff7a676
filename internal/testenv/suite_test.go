package testenv_test

import (
	"context"
	"fmt"
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
	os.Exit(run(m))
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
	audit, err = testenv.StartAuditRecorder(env.AuditWebhookAddr)
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
