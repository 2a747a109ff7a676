package tenancy

import (
	"context"
	"testing"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// tenantSA is every tenant namespace's ServiceAccount, and the
	// controllers' --default-service-account, as in Flux's multi-tenancy
	// lockdown.
	tenantSA = "tenant"
)

// lockdown are the multi-tenancy flags kustomize-controller,
// helm-controller and reflux all run with: the same names and the same
// meaning.
var lockdown = []string{"--no-cross-namespace-refs=true", "--default-service-account=" + tenantSA}

var (
	env   *testenv.Env
	alice fixture.Person
)

func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{KustomizeControllerArgs: lockdown,
		Helm: true, HelmControllerArgs: lockdown, AuditWebhook: &testenv.AuditWebhook{}}})
}

// setup provisions alice, on call, and starts reflux as config/default
// installs it (InstalledUser): impersonating tenants needs the verb
// config/rbac grants, and nothing more.
func setup(ctx context.Context, env *testenv.Env) error {
	var err error
	if alice, err = fixture.OnCall(ctx, env, "alice@example.com"); err != nil {
		return err
	}
	_, err = fixture.StartSuiteReflux(ctx, env, fixture.Options{Args: lockdown})
	return err
}
