package tenancy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	timeout  = 2 * time.Minute
	interval = 100 * time.Millisecond

	// tenantSA is every tenant namespace's ServiceAccount, and the
	// controllers' --default-service-account, as in Flux's multi-tenancy
	// lockdown.
	tenantSA = "tenant"
)

// lockdown are the multi-tenancy flags kustomize-controller and reflux
// both run with: the same names and the same meaning.
var lockdown = []string{"--no-cross-namespace-refs=true", "--default-service-account=" + tenantSA}

var (
	env    *testenv.Env
	alice  testenv.User
	aliceC ctrlclient.Client
	reflux *testenv.RefluxProcess
	audit  *testenv.AuditRecorder
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx := context.Background()
	scheme, err := manager.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme, KustomizeControllerArgs: lockdown,
		AuditWebhook: &testenv.AuditWebhook{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if audit, err = testenv.StartAuditRecorder(env.AuditWebhookAddr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer audit.Close() //nolint:errcheck // test teardown
	code := 1
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up:", err)
	} else {
		code = m.Run()
	}
	if reflux != nil {
		if err := reflux.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code != 0 {
		_ = env.DumpLogs(os.Stdout, 256<<10)
		_ = testenv.DumpFiles(os.Stdout, 256<<10, filepath.Join(env.Dir, "reflux.log"))
	}
	return code
}

// setup provisions alice, on call, and starts reflux as config/default
// installs it (InstalledUser): impersonating tenants needs the verb
// config/rbac grants, and nothing more.
func setup(ctx context.Context) error {
	var err error
	if alice, err = env.AddBreakGlassUser(ctx, "alice@example.com"); err != nil {
		return err
	}
	if aliceC, err = ctrlclient.New(alice.Config, ctrlclient.Options{Scheme: env.Scheme}); err != nil {
		return err
	}
	reflux, err = testenv.StartReflux(ctx, env, testenv.RefluxOptions{Args: append([]string{
		"--log-level=debug",
		"--concurrent=2",
		"--artifact-retry-interval=2s",
		"--policy-retry-interval=2s",
	}, lockdown...)})
	return err
}
