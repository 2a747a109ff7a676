package profiles

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestFullProfile runs reflux under config/profiles/full (config/default)
// with its default dry-run comparison: kubectl drift is recorded and held.
// Write-back under this RBAC is what e2e/journey runs; the policy here is
// report-only so that no git credentials are needed.
func TestFullProfile(t *testing.T) {
	g := NewWithT(t)
	const name = "reflux-full"
	a := newApp(t, "full", "", func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.ReportOnly = true })
	r := startReflux(t, name, profile{path: "profiles/full"})

	expectAccess(g, r.User.Config, true, a.Name, "get configmaps", "list configmaps", "watch configmaps", "patch configmaps",
		"list deployments.apps", "watch deployments.apps", "patch deployments.apps", "create drifts.reflux.dev")
	// The dry run and the hold patch; nothing creates or deletes.
	expectAccess(g, r.User.Config, false, a.Name, "create configmaps", "delete deployments.apps")
	// Secrets: get by name for the credentials policies and sources
	// name; listing and watching them is opt-in (TestSecretsComponent).
	expectAccess(g, r.User.Config, true, a.Name, "get secrets")
	expectAccess(g, r.User.Config, false, a.Name, "list secrets", "watch secrets", "patch secrets")
	// Not in the shipped list of kinds: RBAC objects and CRDs.
	expectAccess(g, r.User.Config, false, a.Name, "list roles.rbac.authorization.k8s.io")
	expectAccess(g, r.User.Config, false, "", "list customresourcedefinitions.apiextensions.k8s.io")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: a.Name}}
	editHeld(g, a, cm, "/data/NEW_CHECKOUT", func() { cm.Data["NEW_CHECKOUT"] = "true" })
	g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
}
