package controllers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// kubectlPath finds kubectl: the one `make testbin` built, or the system's.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if p, err := filepath.Abs(filepath.Join("..", "bin", "kubectl")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl not found: run `make testbin`")
	}
	return p
}

// TestInstallManifestsServerDryRun proves that `kubectl apply -k
// config/default` is accepted by a real apiserver: every manifest is valid
// for its schema and admission, not merely well-formed YAML.
func TestInstallManifestsServerDryRun(t *testing.T) {
	g := NewWithT(t)
	user, err := testEnv.ControlPlane.AddUser(envtest.User{Name: "installer", Groups: []string{"system:masters"}}, nil)
	g.Expect(err).ToNot(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	g.Expect(err).ToNot(HaveOccurred())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())

	// A server-side dry run persists nothing, so the namespaced objects
	// need their namespace to exist already, as it would after a real
	// apply of the Namespace.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "reflux-system"}}
	g.Expect(k8sClient.Create(context.Background(), ns)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), ns) })

	cmd := exec.Command(kubectlPath(t), "--kubeconfig", path, "apply", "-k", filepath.Join("..", "config", "default"), "--dry-run=server")
	out, err := cmd.CombinedOutput()
	g.Expect(err).ToNot(HaveOccurred(), string(out))
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/reversesyncpolicies.reflux.dev",
		"customresourcedefinition.apiextensions.k8s.io/drifts.reflux.dev",
		"clusterrole.rbac.authorization.k8s.io/reflux-manager",
		"clusterrole.rbac.authorization.k8s.io/reflux-workloads",
		"clusterrole.rbac.authorization.k8s.io/reflux-common-workloads",
		"deployment.apps/reflux-controller",
		"(server dry run)",
	} {
		g.Expect(string(out)).To(ContainSubstring(want))
	}
}
