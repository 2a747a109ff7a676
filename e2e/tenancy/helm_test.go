package tenancy

import (
	"context"
	"fmt"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// installed waits until helm-controller has installed the HelmRelease
// app of ns, and returns it.
func installed(g Gomega, ns string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, hr)).To(Succeed())
		g.Expect(hr.Status.History.Latest()).NotTo(BeNil())
		g.Expect(conditions.IsReady(hr)).To(BeTrue())
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	return hr
}

// TestTenantHelmReleaseIsHeldAsItsServiceAccount (issue 19 §2): the
// tenant's HelmRelease names no ServiceAccount, so helm-controller, locked
// down, installs its chart as --default-service-account in the tenant's
// namespace. alice scales the chart's Deployment; reflux holds it as that
// same ServiceAccount, never as itself, as it does a Kustomization's
// objects.
func TestTenantHelmReleaseIsHeldAsItsServiceAccount(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := "team-h"
	newTenant(t, ns)
	govern(t, ns, governOptions{dir: fixture.ChartTree, serviceAccount: tenantSA,
		objects: map[string]string{"release.yaml": fixture.HelmReleaseFile(ns, "  namespace: "+ns+"\n", "")}})
	installed(g, ns)

	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = ns, "app"
	fixture.KubectlEdit(g, alice.Client, deploy, func() { deploy.Spec.Replicas = ptr.To(int32(4)) })
	g.Eventually(func() error {
		recs := records(g, ns)
		if len(recs) != 1 || recs[0].Spec.Object.Kind != "Deployment" {
			return fmt.Errorf("records: %d", len(recs))
		}
		d := &appsv1.Deployment{}
		g.Expect(alice.Client.Get(ctx, client.ObjectKeyFromObject(deploy), d)).To(Succeed())
		if a := d.Annotations; a[refluxv1.HelmDriftDetectionAnnotation] != refluxv1.HelmDriftDetectionDisabled ||
			a[refluxv1.HeldByAnnotation] != recs[0].Name {
			return fmt.Errorf("not held: %v", a)
		}
		return nil
	}, fixture.Timeout, fixture.Interval).Should(Succeed())

	// The audit log shows who made the hold: reflux, acting as the
	// tenant, as helm-controller acted as the tenant for the install.
	g.Eventually(func() []auditv1.Event { return writesOf(g, ns, "app") }, fixture.Timeout, fixture.Interval).Should(
		ContainElement(And(HaveField("User.Username", testenv.RefluxUser), HaveField("ImpersonatedUser.Username", tenantUser(ns)),
			HaveField("Verb", "patch"), HaveField("ObjectRef.Resource", "deployments"),
			HaveField("ResponseStatus.Code", BeEquivalentTo(200)))))
	g.Expect(writesOf(g, ns, "app")).To(ContainElement(And(HaveField("ImpersonatedUser.Username", tenantUser(ns)),
		HaveField("User.Username", testenv.HelmControllerUser), HaveField("ObjectRef.Resource", "deployments"))),
		"helm-controller installed the chart as the tenant")
	g.Expect(writesOf(g, ns, "app")).NotTo(ContainElement(And(HaveField("User.Username", testenv.RefluxUser),
		HaveField("ObjectRef.Resource", "deployments"), HaveField("ImpersonatedUser", BeNil()))),
		"reflux never wrote the tenant's object as itself")
}

// TestTenantHelmReleaseCannotMakeRefluxHoldElsewhere: the tenant's
// HelmRelease installed its chart into a namespace the tenant has since
// lost. A live change there is neither evaluated nor held, since the
// tenant's ServiceAccount may not dry-run or patch it, as for a
// Kustomization's objects, and the HelmRelease's ReverseDrifted names
// the missing permission. The change is kept: once the permission is
// granted again, the next look records and holds it.
func TestTenantHelmReleaseCannotMakeRefluxHoldElsewhere(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, shared := "team-i", "team-i-shared"
	newTenant(t, ns)
	g.Expect(env.CreateNamespace(ctx, shared)).To(Succeed())
	grant(t, ns, shared)
	govern(t, ns, governOptions{dir: fixture.ChartTree, serviceAccount: tenantSA,
		objects: map[string]string{"release.yaml": fixture.HelmReleaseFile(ns, "  namespace: "+ns+"\n",
			"  targetNamespace: "+shared+"\n  releaseName: app\n")}})
	installed(g, ns)
	revoke(t, ns, shared)

	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = shared, "app"
	fixture.KubectlEdit(g, alice.Client, deploy, func() { deploy.Spec.Replicas = ptr.To(int32(4)) })
	reverseDrifted := func(g Gomega) string {
		hr := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, hr)).To(Succeed())
		return fixture.Describe(conditions.Get(hr, refluxv1.ReverseDriftedCondition))
	}
	g.Eventually(reverseDrifted, fixture.Timeout, fixture.Interval).Should(And(
		HavePrefix("Unknown/"+refluxv1.ImpersonationForbiddenReason),
		ContainSubstring(tenantUser(ns)+` cannot patch resource "deployments" in API group "apps" in the namespace "`+shared+`"`),
		ContainSubstring("(Deployment/"+shared+"/app); 1 live change(s) kept without a hold")))
	annotations := func(g Gomega) map[string]string {
		d := &appsv1.Deployment{}
		g.Expect(alice.Client.Get(ctx, client.ObjectKeyFromObject(deploy), d)).To(Succeed())
		return d.Annotations
	}
	g.Expect(annotations(g)).NotTo(HaveKey(refluxv1.HeldByAnnotation), "no hold")
	g.Expect(records(g, ns)).To(BeEmpty(), "nothing the tenant could not tell")

	grant(t, ns, shared)
	g.Eventually(annotations, fixture.Timeout, fixture.Interval).Should(
		HaveKeyWithValue(refluxv1.HelmDriftDetectionAnnotation, refluxv1.HelmDriftDetectionDisabled), "held once it may be")
	g.Eventually(func(g Gomega) []string {
		recs := records(g, ns)
		g.Expect(recs).To(HaveLen(1))
		return pointers(recs[0])
	}, fixture.Timeout, fixture.Interval).Should(ContainElement("/spec/replicas"), "the kept change, recorded")
	g.Eventually(reverseDrifted, fixture.Timeout, fixture.Interval).Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))
}
