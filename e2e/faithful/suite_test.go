package faithful

import (
	"context"
	"testing"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

var (
	env   *testenv.Env
	cases []*fluxCase
)

// TestMain starts one environment for the package and hands every corpus
// case to Flux before any test runs, so kustomize-controller reconciles
// them side by side while the tests wait on each in turn.
func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{
		Env: testenv.Options{
			CRDDirectories: []string{"testdata/crds"},
			// More workers than the default 4: the corpus is a few dozen
			// Kustomizations created at once.
			KustomizeControllerArgs: []string{"--concurrent=10"},
			SourceControllerArgs:    []string{"--concurrent=10"},
		},
		Setup: func(ctx context.Context, _ *testenv.Env) (err error) {
			cases, err = setup(ctx)
			return err
		},
	})
}
