package helmlive

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestARemoteClustersReleaseIsHeldAndRecorded (issue 19 §2): a
// HelmRelease in the hub whose spec.kubeConfig names a spoke, a
// kube-apiserver of its own, has helm-controller install the chart there.
// alice scales the chart's Deployment in the spoke. reflux, connected to
// the spoke through the HelmRelease's own kubeconfig Secret, holds it
// there and records it in the hub, beside the Kustomization that applies
// the HelmRelease, naming the cluster, the release read from the spoke's
// Helm storage, and the values line in Git, and pushes a prefilled branch
// verified with that release's chart. helm-controller's reconcile
// leaves the held edit alone; dismissing the record releases the hold in
// the spoke, and helm-controller puts the chart's replicas back. When the
// spoke stops answering, the HelmRelease says so.
func TestARemoteClustersReleaseIsHeldAndRecorded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	spoke, err := testenv.Start(ctx, testenv.Options{WithoutFlux: true, WithoutRefluxCRDs: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = spoke.Stop() })
	const name = "remote"
	g.Expect(env.CreateNamespace(ctx, name)).To(Succeed())
	g.Expect(spoke.CreateNamespace(ctx, name)).To(Succeed(), "helm-controller installs into an existing namespace")
	// One kubeconfig, as a hub's Flux has for each spoke, for
	// reflux-system/reflux-controller with config/spoke's grants and
	// nothing more. helm-controller installs through it as the
	// HelmRelease's ServiceAccount, which may do anything in the spoke;
	// reflux watches, reads Helm's storage and holds through it, and
	// dry-runs as that ServiceAccount too.
	g.Expect(spoke.InstallProfile(ctx, "spoke")).To(Succeed())
	g.Expect(spoke.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "deployer"}})).To(Succeed())
	g.Expect(spoke.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: name, Name: "deployer"}}})).To(Succeed())
	flux, err := testenv.ServiceAccountUser(testenv.RefluxNamespace, testenv.RefluxServiceAccount)(ctx, spoke)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := os.ReadFile(flux.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "spoke-kubeconfig"},
		Data: map[string][]byte{"value": kubeconfig}})).To(Succeed())
	app := newApp(t, name, "", "  values:\n    replicaCount: 2\n  serviceAccountName: deployer\n"+
		"  kubeConfig:\n    secretRef:\n      name: spoke-kubeconfig\n")

	inSpoke := func(g Gomega) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(spoke.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "app"}, d)).To(Succeed())
		return d
	}
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "app"}, &appsv1.Deployment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the release is installed in the spoke, not the hub: %v", err)
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(Equal("False/" + refluxv1.NoDriftReason + ": no drift from release " + name + "/app.v1"))

	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = name, "app"
	fixture.KubectlEdit(g, spoke.Client, deploy, func() { deploy.Spec.Replicas = ptr.To(int32(5)) })

	rec := app.WaitRecord(g, "Deployment", "app", fixture.All(fixture.HasField("/spec/replicas"), fixture.InState(refluxv1.DriftHeld)))
	g.Expect(rec.Spec.HelmRelease).To(Equal(&refluxv1.HelmReleaseRef{Namespace: name, Name: "app", Release: name + "/app.v1",
		Cluster: "Secret/spoke-kubeconfig"}))
	g.Expect(rec.Spec.Kustomization).To(Equal(refluxv1.KustomizationRef{Namespace: name, Name: name}),
		"the Kustomization that applies the HelmRelease is the hub's own")
	f, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]string{f.GitValue, f.LiveValue}).To(Equal([]string{"2", "5"}), "the spoke's release's value and the live one")
	g.Expect(f.FluxReverts).To(BeTrue(), "drift correction is enabled")
	held := inSpoke(g)
	g.Expect(heldForHelm(held)).To(BeTrue(), "held in the spoke with helm-controller's key: %v", held.GetAnnotations())
	g.Expect(held.GetAnnotations()).To(HaveKeyWithValue(refluxv1.HeldByAnnotation, rec.Name))
	_, f = tracedField(g, app, "/spec/replicas", "")
	g.Expect(f.Origin.Kind).To(Equal("values"))
	g.Expect(f.Origin.File).To(Equal("release/release.yaml"))
	g.Expect(f.Origin.ValuesKeys).To(Equal([]string{"replicaCount"}))

	// The prefilled branch's values change is verified by rendering the
	// chart of the release read from the spoke's storage.
	rec = app.WaitRecord(g, "Deployment", "app", fixture.Pushed)
	g.Expect(rec.Status.Branch).To(ContainSubstring("needs-decision"))

	reconciled(g, app)
	g.Expect(*inSpoke(g).Spec.Replicas).To(Equal(int32(5)), "helm-controller leaves the held edit alone")
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason + ": 1 field(s) in 1 object(s) drifted"))

	fixture.Dismiss(g, env.Client, rec)
	app.WaitRecord(g, "Deployment", "app", fixture.InState(refluxv1.DriftDismissed))
	g.Eventually(func(g Gomega) {
		d := inSpoke(g)
		g.Expect(heldForHelm(d)).To(BeFalse(), "released in the spoke")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(2)), "helm-controller corrected the drift once released")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(Equal("False/" + refluxv1.NoDriftReason + ": no drift from release " + name + "/app.v1"))

	g.Expect(spoke.StopAPIServer(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("Unknown/" + refluxv1.ClusterUnreachableReason + ": the remote cluster of Secret/spoke-kubeconfig does not answer"))
}
