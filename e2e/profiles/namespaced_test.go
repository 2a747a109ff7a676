package profiles

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
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
	listed := newApp(t, "tenant-a", reportOnly)
	unlisted := newApp(t, "tenant-b", reportOnly)
	r := startReflux(t, name, profile{path: "profiles/namespaced"})

	for _, tt := range []struct {
		access
		want bool
	}{
		{access{"watch", "", "configmaps", listed.ns}, true},
		{access{"patch", "", "configmaps", listed.ns}, true},
		{access{"list", "apps", "deployments", listed.ns}, true},
		{access{"patch", "apps", "deployments", listed.ns}, true},
		{access{"create", "reflux.dev", "drifts", listed.ns}, true},
		{access{"get", "", "secrets", listed.ns}, true},
		{access{"list", "", "secrets", listed.ns}, false},
		{access{"watch", "", "secrets", listed.ns}, false},
		{access{"get", "", "secrets", unlisted.ns}, false},
		{access{"list", "apps", "deployments", unlisted.ns}, false},
		{access{"list", "", "configmaps", unlisted.ns}, false},
		{access{"patch", "", "configmaps", unlisted.ns}, false},
		{access{"create", "reflux.dev", "drifts", unlisted.ns}, false},
		{access{"list", "", "configmaps", ""}, false},
		{access{"list", "kustomize.toolkit.fluxcd.io", "kustomizations", ""}, false},
	} {
		g.Expect(allowed(g, r.User.Config, tt.access)).To(Equal(tt.want), "%s", tt.access)
	}

	outside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: unlisted.ns}}
	kubectlEdit(g, outside, func() { outside.Data["NEW_CHECKOUT"] = "true" })
	inside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: listed.ns}}
	kubectlEdit(g, inside, func() { inside.Data["NEW_CHECKOUT"] = "true" })

	waitRecord(g, listed.ns, "ConfigMap", "checkout-flags", "/data/NEW_CHECKOUT")
	g.Eventually(func() bool {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(inside), inside)).To(Succeed())
		return isHeld(inside)
	}, timeout, interval).Should(BeTrue(), "drift in the listed namespace is held")

	// The edit outside came first, and reflux handles changes in order
	// per worker; by now it would have acted on it if it could see it.
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(outside), outside)).To(Succeed())
	g.Expect(isHeld(outside)).To(BeFalse(), "drift in the unlisted namespace is held")
	records := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), records, client.InNamespace(unlisted.ns))).To(Succeed())
	g.Expect(records.Items).To(BeEmpty(), "records in the unlisted namespace")
	g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
}
