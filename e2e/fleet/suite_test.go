package fleet

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// hubUser prefixes the spoke's ServiceAccounts the hub's kubeconfig
// Secrets connect as (spokeKubeconfig).
const hubUser = "hub"

// workloadIdentityGate is the flag of Flux's object-level workload
// identity, which kustomize-controller and reflux both take.
const workloadIdentityGate = "--feature-gates=ObjectLevelWorkloadIdentity=true"

// The tokens the hub's and the spoke's apiservers send to reflux's one
// audit webhook, which tells their writes apart by them.
const (
	hubAuditToken   = "hub-audit-token"
	spokeAuditToken = "spoke-audit-token"
)

var (
	// env is the hub: Flux, the git server and reflux, the real binary.
	env *testenv.Env
	// spoke is the remote cluster: a kube-apiserver and etcd of its own,
	// with no Flux, and an audit log that has lists and watches too.
	spoke *testenv.Env
	// link stands between the hub and the spoke: every connection of
	// Flux's and reflux's to the spoke goes through it, so a test can
	// make the spoke stop answering the hub.
	link *testenv.StallProxy
	// hubReflux is the suite's reflux.
	hubReflux *testenv.RefluxProcess
)

// remote is a spoke as the hub reaches it: its environment, the address
// the hub's kubeconfigs name for it, and the audit token its apiserver
// sends.
type remote struct {
	env        *testenv.Env
	server     string
	auditToken string
}

// theSpoke is the suite's spoke, through the link.
func theSpoke() remote {
	return remote{env: spoke, server: "https://" + link.Addr(), auditToken: spokeAuditToken}
}

func TestMain(m *testing.M) {
	// Flux's object-level workload identity on, in kustomize-controller
	// and reflux alike, for spec.kubeConfig.configMapRef.
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{AuditWebhook: &testenv.AuditWebhook{Token: hubAuditToken},
		KustomizeControllerArgs: []string{workloadIdentityGate}}})
}

func setup(ctx context.Context, hub *testenv.Env) error {
	var err error
	// The spoke sends its audit events to the hub's reflux, as the hub's
	// apiserver does, with a token of its own. The tests read the spoke's
	// audit log file, which has lists and watches too.
	spoke, err = testenv.Start(ctx, testenv.Options{WithoutFlux: true, WithoutRefluxCRDs: true,
		AuditWebhook: &testenv.AuditWebhook{URL: "https://" + hub.AuditWebhookAddr + "/audit", CA: hub.AuditWebhookTLS.CA,
			Token: spokeAuditToken, Reads: true}})
	if err != nil {
		return fmt.Errorf("starting the spoke: %w", err)
	}
	fixture.Defer(spoke.Stop)
	// reflux's RBAC in the spoke, as a user installs it (config/spoke);
	// the spoke's aggregation controller fills reflux-workloads in.
	if err := spoke.InstallProfile(ctx, "spoke"); err != nil {
		return fmt.Errorf("installing config/spoke in the spoke: %w", err)
	}
	for _, p := range spoke.LogPaths() {
		fixture.AddLog(p)
	}
	u, err := url.Parse(spoke.Config.Host)
	if err != nil {
		return err
	}
	if link, err = testenv.NewStallProxy(u.Host); err != nil {
		return err
	}
	fixture.Defer(link.Close)
	// A short probe interval: the journeys wait seconds, not the default
	// ten, for reflux to notice the spoke going and coming back.
	tokenFile := filepath.Join(hub.Dir, "audit-token")
	if err := os.WriteFile(tokenFile, []byte(hubAuditToken), 0o600); err != nil {
		return err
	}
	hubReflux, err = fixture.StartSuiteReflux(ctx, hub, fixture.Options{AuditWebhook: true, Args: []string{"--cluster-probe-interval=1s", workloadIdentityGate,
		"--audit-token-file=" + tokenFile,
		"--audit-tls-cert-file=" + hub.AuditWebhookTLS.CertFile, "--audit-tls-key-file=" + hub.AuditWebhookTLS.KeyFile}})
	return err
}

// spokeKubeconfig returns a kubeconfig for a ServiceAccount name of the
// spoke's reflux-system namespace, bound to the ClusterRoles config/spoke
// grants reflux-controller there and to nothing else, whose server is the
// link to the spoke. Each test connects as its own, so that the spoke's
// audit log tells the engines apart.
func spokeKubeconfig(ctx context.Context, name string) (user string, kubeconfig []byte, err error) {
	return remoteKubeconfig(ctx, theSpoke(), name)
}

// remoteKubeconfig is spokeKubeconfig for any spoke.
func remoteKubeconfig(ctx context.Context, in remote, name string) (user string, kubeconfig []byte, err error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.RefluxNamespace, Name: name}}
	if err := in.env.Client.Create(ctx, sa); err != nil {
		return "", nil, err
	}
	for _, role := range []string{"reflux-workloads", "reflux-spoke-impersonation"} {
		if err := in.env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: name}}}); err != nil {
			return "", nil, err
		}
	}
	u, err := testenv.ServiceAccountUser(sa.Namespace, name)(ctx, in.env)
	if err != nil {
		return "", nil, err
	}
	b, err := os.ReadFile(u.KubeconfigPath)
	if err != nil {
		return "", nil, err
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return "", nil, err
	}
	for _, c := range cfg.Clusters {
		c.Server = in.server
	}
	kubeconfig, err = clientcmd.Write(*cfg)
	return u.Name, kubeconfig, err
}
