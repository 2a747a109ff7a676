package helmlive

import (
	"context"
	"testing"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

var (
	env *testenv.Env
	// alice is the on-call engineer whose kubectl edits drift the objects.
	alice fixture.Person
	// rfx is the suite's reflux, whose metrics the tests read.
	rfx *testenv.RefluxProcess
)

// TestMain starts one environment, with helm-controller, and one reflux
// for the package; every test pushes an app of its own.
func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Build: true, Env: testenv.Options{Helm: true}})
}

func setup(ctx context.Context, env *testenv.Env) error {
	var err error
	if alice, err = fixture.OnCall(ctx, env, "alice@example.com"); err != nil {
		return err
	}
	rfx, err = fixture.StartSuiteReflux(ctx, env, fixture.Options{})
	return err
}
