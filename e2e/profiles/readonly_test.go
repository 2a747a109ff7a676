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
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
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
	a := newApp(t, "read-only", "", func(p *refluxv1.ReverseSyncPolicy) {
		p.Spec.Git.ReportOnly = true
		p.Spec.Hold = refluxv1.HoldNever
	})
	before := env.Git.Requests(a.Repo)

	// Nothing more: the profile's ServiceAccount cannot write workloads
	// or read Secrets, only reflux's own records.
	expectAccess(g, r.User.Config, true, a.Name, "list configmaps", "watch deployments.apps", "create drifts.reflux.dev")
	expectAccess(g, r.User.Config, false, a.Name, "patch configmaps", "patch deployments.apps", "update deployments.apps",
		"patch kustomizations.kustomize.toolkit.fluxcd.io", "get secrets", "watch secrets")
	expectAccess(g, r.User.Config, false, "", "list secrets")
	// RBAC objects and CRDs, which the full profile leaves out.
	expectAccess(g, r.User.Config, true, a.Name, "list rolebindings.rbac.authorization.k8s.io")
	expectAccess(g, r.User.Config, true, "", "watch customresourcedefinitions.apiextensions.k8s.io")
	// Each group of reflux-common-workloads lost patch, and kept watch.
	common := []string{"services", "statefulsets.apps", "jobs.batch", "horizontalpodautoscalers.autoscaling",
		"poddisruptionbudgets.policy", "ingresses.networking.k8s.io"}
	for _, resource := range common {
		expectAccess(g, r.User.Config, true, a.Name, "watch "+resource)
		expectAccess(g, r.User.Config, false, a.Name, "patch "+resource)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: a.Name}}
	fixture.KubectlEdit(g, env.Client, cm, func() { cm.Data["NEW_CHECKOUT"] = "true" })
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: a.Name}}
	fixture.KubectlEdit(g, env.Client, web, func() { web.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/web:1.4.1-hotfix" })

	// The status is a second write: wait for it, then read it.
	detected := fixture.InState(refluxv1.DriftDetected) // recorded, never held
	for _, rec := range []*refluxv1.Drift{
		a.WaitRecord(g, "ConfigMap", "checkout-flags", fixture.All(fixture.HasField("/data/NEW_CHECKOUT"), detected)),
		a.WaitRecord(g, "Deployment", "web", fixture.All(fixture.HasField("/spec/template/spec/containers/0/image"), detected)),
	} {
		g.Expect(rec.Status.HeldSince).To(BeNil(), "record %s", rec.Name)
		g.Expect(rec.Status.Branch).To(BeEmpty(), "record %s", rec.Name)
	}
	// reflux holds before it records, so the records existing means no
	// hold is coming.
	for _, obj := range []client.Object{cm, web} {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(fixture.Held(obj)).To(BeFalse(), "%s is held", obj.GetName())
	}
	g.Expect(env.Git.Requests(a.Repo).Sub(before)).To(BeZero(), "no clone, fetch or push from reflux")
	g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
}
