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

// TestFullProfile runs reflux under config/profiles/full (config/default)
// with its default dry-run comparison: kubectl drift is recorded and held.
// Write-back under this RBAC is what e2e/journey runs; the policy here is
// report-only so that no git credentials are needed.
func TestFullProfile(t *testing.T) {
	g := NewWithT(t)
	const name = "reflux-full"
	a := newApp(t, "full", func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.ReportOnly = true })
	r := startReflux(t, name, profile{path: "profiles/full"})

	for _, tt := range []struct {
		access
		want bool
	}{
		{access{"get", "", "configmaps", a.ns}, true},
		{access{"list", "", "configmaps", a.ns}, true},
		{access{"watch", "", "configmaps", a.ns}, true},
		{access{"patch", "", "configmaps", a.ns}, true},
		{access{"list", "apps", "deployments", a.ns}, true},
		{access{"watch", "apps", "deployments", a.ns}, true},
		{access{"patch", "apps", "deployments", a.ns}, true},
		{access{"create", "reflux.dev", "drifts", a.ns}, true},
		// The dry run and the hold patch; nothing creates or deletes.
		{access{"create", "", "configmaps", a.ns}, false},
		{access{"delete", "apps", "deployments", a.ns}, false},
		// Secrets: get by name for the credentials policies and sources
		// name; listing and watching them is opt-in (TestSecretsComponent).
		{access{"get", "", "secrets", a.ns}, true},
		{access{"list", "", "secrets", a.ns}, false},
		{access{"watch", "", "secrets", a.ns}, false},
		{access{"patch", "", "secrets", a.ns}, false},
		// Not in the shipped list of kinds: RBAC objects and CRDs.
		{access{"list", "rbac.authorization.k8s.io", "roles", a.ns}, false},
		{access{"list", "apiextensions.k8s.io", "customresourcedefinitions", ""}, false},
	} {
		g.Expect(allowed(g, r.User.Config, tt.access)).To(Equal(tt.want), "%s", tt.access)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: a.ns}}
	kubectlEdit(g, cm, func() { cm.Data["NEW_CHECKOUT"] = "true" })
	waitRecord(g, a.ns, "ConfigMap", "checkout-flags", "/data/NEW_CHECKOUT")
	g.Eventually(func() bool {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		return isHeld(cm)
	}, timeout, interval).Should(BeTrue(), "drift is held")
	g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
}
