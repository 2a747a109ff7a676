package admission

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
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

func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Env: testenv.Options{WithoutFlux: true}, Setup: setup})
}

func setup(ctx context.Context, env *testenv.Env) error {
	for _, ns := range []string{"reflux-system", "flux-system", "apps"} {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			return err
		}
	}
	admission, err := filepath.Abs(filepath.Join("..", "..", "config", "admission"))
	if err != nil {
		return err
	}
	if out, err := env.Kubectl(ctx, "apply", "--server-side", "-k", admission); err != nil {
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
