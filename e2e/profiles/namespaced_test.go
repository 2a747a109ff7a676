package profiles

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestNamespacedProfile runs reflux under config/profiles/namespaced,
// which grants it tenant-a only, started with --watch-namespaces=tenant-a
// as the profile's Deployment is: kubectl drift in tenant-a is recorded
// and held; the same drift in tenant-b, governed by the same kind of
// policy, is not even seen, and reflux asks the apiserver for nothing
// outside tenant-a.
func TestNamespacedProfile(t *testing.T) {
	g := NewWithT(t)
	const name = "reflux-namespaced"
	reportOnly := func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.ReportOnly = true }
	listed := newApp(t, "tenant-a", "", reportOnly)
	unlisted := newApp(t, "tenant-b", "", reportOnly)
	r := startReflux(t, name, profile{path: "profiles/namespaced"})

	expectAccess(g, r.User.Config, true, listed.Name, "watch configmaps", "patch configmaps",
		"list deployments.apps", "patch deployments.apps", "create drifts.reflux.dev", "get secrets")
	expectAccess(g, r.User.Config, false, listed.Name, "list secrets", "watch secrets")
	expectAccess(g, r.User.Config, false, unlisted.Name, "get secrets", "list deployments.apps", "list configmaps",
		"patch configmaps", "create drifts.reflux.dev")
	expectAccess(g, r.User.Config, false, "", "list configmaps", "list kustomizations.kustomize.toolkit.fluxcd.io")

	outside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: unlisted.Name}}
	fixture.KubectlEdit(g, env.Client, outside, func() { outside.Data["NEW_CHECKOUT"] = "true" })
	inside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: listed.Name}}
	editHeld(g, listed, inside, "/data/NEW_CHECKOUT", func() { inside.Data["NEW_CHECKOUT"] = "true" })

	// The edit outside came first, and reflux handles changes in order
	// per worker; by now it would have acted on it if it could see it.
	g.Expect(fixture.Held(unlisted.ConfigMap(g, "checkout-flags"))).To(BeFalse(), "drift in the unlisted namespace is held")
	records := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), records, client.InNamespace(unlisted.Name))).To(Succeed())
	g.Expect(records.Items).To(BeEmpty(), "records in the unlisted namespace")
	g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
}
