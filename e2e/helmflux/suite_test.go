package helmflux

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
)

// TestMain starts one environment, with helm-controller, for the
// package; every test installs releases of its own in namespaces of
// their own.
func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{Helm: true}})
}

func setup(ctx context.Context, env *testenv.Env) error {
	var err error
	alice, err = fixture.OnCall(ctx, env, "alice@example.com")
	return err
}
