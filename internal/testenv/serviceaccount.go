package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// serviceAccountTokenTTL is how long a minted token lives. A test run is
// far shorter; a demo left open for exploring is not, and a day covers it.
const serviceAccountTokenTTL = 24 * time.Hour

// InstalledUser is the KubeconfigSource of a real installation: it
// installs config/default (InstallReflux) and connects as its
// ServiceAccount, so reflux has exactly the permissions config/rbac grants
// and a missing verb fails the test that needs it.
func InstalledUser() KubeconfigSource {
	return func(ctx context.Context, e *Env) (User, error) {
		if err := e.InstallReflux(ctx); err != nil {
			return User{}, err
		}
		return ServiceAccountUser(RefluxNamespace, RefluxServiceAccount)(ctx, e)
	}
}

// ProfileUser is InstalledUser for a profile: it installs config/<path>
// with components (InstallProfile) and connects as its ServiceAccount.
func ProfileUser(path string, components ...string) KubeconfigSource {
	return func(ctx context.Context, e *Env) (User, error) {
		if err := e.InstallProfile(ctx, path, components...); err != nil {
			return User{}, err
		}
		return ServiceAccountUser(RefluxNamespace, RefluxServiceAccount)(ctx, e)
	}
}

// ServiceAccountUser returns a KubeconfigSource that mints a token for the
// existing ServiceAccount namespace/name with the TokenRequest API, as the
// kubelet does for a pod's projected token, and writes a kubeconfig
// carrying it. The identity is system:serviceaccount:<namespace>:<name>
// with the ServiceAccount groups, and nothing else.
func ServiceAccountUser(namespace, name string) KubeconfigSource {
	return func(ctx context.Context, e *Env) (User, error) {
		token, err := e.serviceAccountToken(ctx, namespace, name)
		if err != nil {
			return User{}, err
		}
		cfg := rest.AnonymousClientConfig(e.Config)
		cfg.BearerToken = token
		cfg.QPS, cfg.Burst = e.Config.QPS, e.Config.Burst
		path, err := e.writeTokenKubeconfig(cfg, namespace+"-"+name)
		if err != nil {
			return User{}, err
		}
		return User{Name: "system:serviceaccount:" + namespace + ":" + name, Config: cfg, KubeconfigPath: path}, nil
	}
}

// serviceAccountToken asks the apiserver for a token of the ServiceAccount.
func (e *Env) serviceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return "", fmt.Errorf("creating clientset: %w", err)
	}
	ttl := int64(serviceAccountTokenTTL / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// writeTokenKubeconfig writes a kubeconfig for cfg's server, CA and bearer
// token, numbered like AddUser's.
func (e *Env) writeTokenKubeconfig(cfg *rest.Config, user string) (string, error) {
	e.usersMu.Lock()
	e.users++
	path := filepath.Join(e.Dir, fmt.Sprintf("user-%d.kubeconfig", e.users))
	e.usersMu.Unlock()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{
		Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: user}
	kc.CurrentContext = "testenv"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig of %s: %w", user, err)
	}
	return path, nil
}

// BreakGlassGroup is the group AddBreakGlassUser puts people in. It is
// bound to the apiserver's bootstrap cluster-admin ClusterRole, as an
// on-call break-glass role is, so tests need no system:masters besides
// the harness's own admin client.
const BreakGlassGroup = "oncall"

// AddBreakGlassUser provisions a person in BreakGlassGroup, binding the
// group to cluster-admin on first use, such as the on-call engineer whose
// `kubectl edit` a test attributes to them.
func (e *Env) AddBreakGlassUser(ctx context.Context, name string) (User, error) {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: BreakGlassGroup + "-break-glass"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: BreakGlassGroup}},
	}
	if err := e.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return User{}, fmt.Errorf("binding group %s to cluster-admin: %w", BreakGlassGroup, err)
	}
	return e.AddUser(name, BreakGlassGroup)
}
