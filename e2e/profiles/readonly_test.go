package profiles

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestReadOnlyProfile runs reflux under config/profiles/read-only with a
// report-only, hold: Never policy: kubectl drift on a ConfigMap and a
// Deployment is recorded, computed in-process because the ServiceAccount
// may not patch; neither object is held, reflux opens no git session and
// the apiserver refuses it nothing, not even a watch of the Secret the
// Kustomization applies (--secrets=metadata, the Deployment's).
func TestReadOnlyProfile(t *testing.T) {
	g := NewWithT(t)
	const name = "reflux-read-only"
	r := startReflux(t, name, profile{path: "profiles/read-only"})
	a := newApp(t, "read-only", func(p *refluxv1.ReverseSyncPolicy) {
		p.Spec.Git.ReportOnly = true
		p.Spec.Hold = refluxv1.HoldNever
	})
	before := env.Git.Requests(a.repo)

	// Nothing more: the profile's ServiceAccount cannot write workloads
	// or read Secrets, only reflux's own records.
	for _, tt := range []struct {
		access
		want bool
	}{
		{access{"list", "", "configmaps", a.ns}, true},
		{access{"watch", "apps", "deployments", a.ns}, true},
		{access{"create", "reflux.dev", "drifts", a.ns}, true},
		{access{"patch", "", "configmaps", a.ns}, false},
		{access{"patch", "apps", "deployments", a.ns}, false},
		{access{"update", "apps", "deployments", a.ns}, false},
		{access{"patch", "kustomize.toolkit.fluxcd.io", "kustomizations", a.ns}, false},
		{access{"get", "", "secrets", a.ns}, false},
		{access{"list", "", "secrets", ""}, false},
		{access{"watch", "", "secrets", a.ns}, false},
		// RBAC objects and CRDs, which the full profile leaves out.
		{access{"list", "rbac.authorization.k8s.io", "rolebindings", a.ns}, true},
		{access{"watch", "apiextensions.k8s.io", "customresourcedefinitions", ""}, true},
	} {
		g.Expect(allowed(g, r.User.Config, tt.access)).To(Equal(tt.want), "%s", tt.access)
	}
	// Each group of reflux-workloads-common lost patch, and kept watch.
	for _, gr := range [][2]string{{"", "services"}, {"apps", "statefulsets"}, {"batch", "jobs"},
		{"autoscaling", "horizontalpodautoscalers"}, {"policy", "poddisruptionbudgets"}, {"networking.k8s.io", "ingresses"}} {
		g.Expect(allowed(g, r.User.Config, access{"watch", gr[0], gr[1], a.ns})).To(BeTrue(), "watch %s.%s", gr[1], gr[0])
		g.Expect(allowed(g, r.User.Config, access{"patch", gr[0], gr[1], a.ns})).To(BeFalse(), "patch %s.%s", gr[1], gr[0])
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: a.ns}}
	kubectlEdit(g, cm, func() { cm.Data["NEW_CHECKOUT"] = "true" })
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: a.ns}}
	kubectlEdit(g, web, func() { web.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/web:1.4.1-hotfix" })

	for _, rec := range []*refluxv1.Drift{
		waitRecord(g, a.ns, "ConfigMap", "checkout-flags", "/data/NEW_CHECKOUT"),
		waitRecord(g, a.ns, "Deployment", "web", "/spec/template/spec/containers/0/image"),
	} {
		// The status is a second write: wait for it, then read it.
		g.Eventually(func() refluxv1.DriftState {
			cur := &refluxv1.Drift{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(rec), cur)).To(Succeed())
			rec = cur
			return cur.Status.State
		}, timeout, interval).Should(Equal(refluxv1.DriftDetected), "record %s: recorded, never held", rec.Name)
		g.Expect(rec.Status.HeldSince).To(BeNil(), "record %s", rec.Name)
		g.Expect(rec.Status.Branch).To(BeEmpty(), "record %s", rec.Name)
	}
	// reflux holds before it records, so the records existing means no
	// hold is coming.
	for _, obj := range []client.Object{cm, web} {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(isHeld(obj)).To(BeFalse(), "%s is held", obj.GetName())
	}
	g.Expect(env.Git.Requests(a.repo).Sub(before)).To(BeZero(), "no clone, fetch or push from reflux")
	g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
}
