package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	breakGlassGroup = "oncall-breakglass"
	refluxSA        = "system:serviceaccount:reflux-system:reflux-controller"
)

var (
	env *testenv.Env
	// alice is on call: a cluster admin in the break-glass group. bob is
	// a cluster admin outside it: admission applies to admins too.
	alice, bob ctrlclient.Client
	// kustomizeController and reflux connect with real ServiceAccount
	// tokens, as the controllers do in a cluster.
	kustomizeController, reflux ctrlclient.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx := context.Background()
	scheme, err := manager.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme, WithoutFlux: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up:", err)
		_ = env.DumpLogs(os.Stdout, 64<<10)
		return 1
	}
	return m.Run()
}

func setup(ctx context.Context) error {
	for _, ns := range []string{"reflux-system", "flux-system", "apps"} {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			return err
		}
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if out, err := env.Kubectl(ctx, "apply", "--server-side", "-k", filepath.Join(root, "config", "admission")); err != nil {
		return fmt.Errorf("kubectl apply -k config/admission: %w\n%s", err, out)
	}
	for _, u := range []struct {
		name   string
		groups []string
		into   *ctrlclient.Client
	}{
		{"alice@example.com", []string{"system:masters", breakGlassGroup}, &alice},
		{"bob@example.com", []string{"system:masters", "developers"}, &bob},
	} {
		user, err := env.AddUser(u.name, u.groups...)
		if err != nil {
			return err
		}
		if *u.into, err = ctrlclient.New(user.Config, ctrlclient.Options{Scheme: env.Scheme}); err != nil {
			return err
		}
	}
	if kustomizeController, err = serviceAccountClient(ctx, "flux-system", "kustomize-controller"); err != nil {
		return err
	}
	if reflux, err = serviceAccountClient(ctx, "reflux-system", "reflux-controller"); err != nil {
		return err
	}
	return nil
}

// serviceAccountClient creates the ServiceAccount, binds it to
// cluster-admin (RBAC is not what these tests are about: admission is),
// and connects with a token minted by TokenRequest (testenv.ServiceAccountUser).
func serviceAccountClient(ctx context.Context, ns, name string) (ctrlclient.Client, error) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, name, err)
	}
	if _, err := env.Kubectl(ctx, "create", "clusterrolebinding", ns+"-"+name, "--clusterrole=cluster-admin", "--serviceaccount="+ns+":"+name); err != nil {
		return nil, fmt.Errorf("binding %s/%s: %w", ns, name, err)
	}
	user, err := testenv.ServiceAccountUser(ns, name)(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("minting a token for %s/%s: %w", ns, name, err)
	}
	return ctrlclient.New(user.Config, ctrlclient.Options{Scheme: env.Scheme})
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}
