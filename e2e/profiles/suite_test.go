package profiles

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	timeout  = 2 * time.Minute
	interval = 100 * time.Millisecond
)

var env *testenv.Env

// logs are the reflux logs dumped when a test fails.
var logs []string

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
	// testdata/crds: a kind reflux is granted nothing on (TestWatchForbidden).
	env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme, CRDDirectories: []string{"testdata/crds"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	code := m.Run()
	if code != 0 {
		_ = env.DumpLogs(os.Stdout, 256<<10)
		_ = testenv.DumpFiles(os.Stdout, 256<<10, logs...)
	}
	return code
}
