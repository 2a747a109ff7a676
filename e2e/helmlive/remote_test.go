package helmlive

import (
	"context"
	"os"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestARemoteClusterReleaseSaysItIsNotWatched (issue 19 §2, not done
// yet): a HelmRelease whose spec.kubeConfig names another cluster has
// its objects and Helm storage there, which reflux does not watch for
// HelmReleases yet. Its ReverseDrifted says so, Unknown, rather than
// staying silent or reading as clean. The "remote" cluster here is this
// one, reached through a kubeconfig of its own, as helm-controller
// would reach any other.
func TestARemoteClusterReleaseSaysItIsNotWatched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "remote"
	g.Expect(env.CreateNamespace(ctx, name)).To(Succeed())
	u, err := env.AddUser("remote-helm", "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := os.ReadFile(u.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "remote-kubeconfig"},
		Data: map[string][]byte{"value": kubeconfig}})).To(Succeed())
	app := newApp(t, name, "", "  kubeConfig:\n    secretRef:\n      name: remote-kubeconfig\n")

	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(Equal("Unknown/" + refluxv1.RemoteClusterReason + ": the release is installed in the cluster of spec.kubeConfig " +
			"(Secret remote-kubeconfig), which reflux does not watch for HelmReleases yet: live changes of its objects are not seen"))
	g.Expect(conditions.IsReady(helmRelease(g, app))).To(BeTrue(), "helm-controller's own conditions are left alone")
}
