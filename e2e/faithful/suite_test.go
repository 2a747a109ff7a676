package faithful

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reflux-dev/reflux/internal/testenv"
)

var (
	env   *testenv.Env
	cases []*fluxCase
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts one environment for the package and hands every corpus case
// to Flux before any test runs, so kustomize-controller reconciles them
// side by side while the tests wait on each in turn.
func run(m *testing.M) int {
	ctx := context.Background()
	crds, err := filepath.Abs("testdata/crds")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{
		CRDDirectories: []string{crds},
		// More workers than the default 4: the corpus is a few dozen
		// Kustomizations created at once.
		KustomizeControllerArgs: []string{"--concurrent=10"},
		SourceControllerArgs:    []string{"--concurrent=10"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	code := 1
	if cases, err = setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the corpus in Flux:", err)
	} else {
		code = m.Run()
	}
	if code != 0 {
		if err := env.DumpLogs(os.Stdout, 256<<10); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}
