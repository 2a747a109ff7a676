package tenancy

import (
	"fmt"
	"testing"

	apiacl "github.com/fluxcd/pkg/apis/acl"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestTenantDriftIsHeldInItsNamespace: the tenant's own drift is recorded
// and held. The dry run and the hold went out as the tenant, which may do
// both in its namespace.
func TestTenantDriftIsHeldInItsNamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := "team-a"
	newTenant(t, ns)
	app := govern(t, ns, governOptions{serviceAccount: tenantSA,
		objects: map[string]string{"settings.yaml": configMap(ns, "settings")}})

	edit(t, ns, "settings", `{"mode":"live"}`)
	g.Eventually(func() error {
		recs := records(g, ns)
		if len(recs) != 1 {
			return fmt.Errorf("%d records", len(recs))
		}
		if got := pointers(recs[0]); len(got) != 1 || got[0] != "/data/mode" {
			return fmt.Errorf("fields %v", got)
		}
		if a := annotations(g, ns, "settings"); a[refluxv1.ReconcileAnnotation] != refluxv1.ReconcileDisabled ||
			a[refluxv1.HeldByAnnotation] != recs[0].Name {
			return fmt.Errorf("not held: %v", a)
		}
		return nil
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Eventually(func() string { return drifted(g, app) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))

	// The audit log shows who made reflux's writes: reflux, acting as the
	// tenant, for the dry run and for the hold, as kustomize-controller
	// acts as the tenant for its applies.
	asTenant := And(HaveField("User.Username", testenv.RefluxUser), HaveField("ImpersonatedUser.Username", tenantUser(ns)),
		HaveField("Verb", "patch"), HaveField("ResponseStatus.Code", BeEquivalentTo(200)))
	g.Eventually(func() []auditv1.Event { return writesOf(g, ns, "settings") }, fixture.Timeout, fixture.Interval).Should(And(
		ContainElement(And(asTenant, HaveField("RequestURI", ContainSubstring("dryRun=All")))),
		ContainElement(And(asTenant, HaveField("RequestURI", Not(ContainSubstring("dryRun")))))))
	g.Expect(writesOf(g, ns, "settings")).To(ContainElement(And(HaveField("ImpersonatedUser.Username", tenantUser(ns)),
		HaveField("User.Username", testenv.KustomizeControllerUser))), "Flux applied as the tenant too")
	g.Expect(writesOf(g, ns, "settings")).NotTo(ContainElement(And(HaveField("User.Username", testenv.RefluxUser),
		HaveField("ImpersonatedUser", BeNil()))), "reflux never wrote the tenant's object as itself")
}

// TestTenantCannotMakeRefluxTouchAnotherNamespace: the tenant applied an
// object into a namespace it has since lost. A live change there is not
// evaluated and not held (the tenant could do neither; nor can Flux
// revert it), and Drifted names the missing permission. The change is
// kept: once the permission is back, the next look records it.
func TestTenantCannotMakeRefluxTouchAnotherNamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, shared := "team-b", "team-b-shared"
	newTenant(t, ns)
	g.Expect(env.CreateNamespace(t.Context(), shared)).To(Succeed())
	grant(t, ns, shared)
	app := govern(t, ns, governOptions{serviceAccount: tenantSA, objects: map[string]string{
		"local.yaml": configMap(ns, "local"), "shared.yaml": configMap(shared, "shared")}})
	revoke(t, ns, shared)

	edit(t, shared, "shared", `{"mode":"live"}`)
	want := fmt.Sprintf(`%s cannot patch resource "configmaps" in API group "" in the namespace %q (ConfigMap/%s/shared); `+
		`1 live change(s) kept without a hold`, tenantUser(ns), shared, shared)
	g.Eventually(func() string { return drifted(g, app) }, fixture.Timeout, fixture.Interval).Should(And(
		HavePrefix("Unknown/"+refluxv1.ImpersonationForbiddenReason), ContainSubstring(want)))
	g.Expect(annotations(g, shared, "shared")).NotTo(HaveKey(refluxv1.ReconcileAnnotation), "no hold")
	g.Expect(records(g, ns)).To(BeEmpty(), "nothing evaluated against a guess")

	grant(t, ns, shared)
	edit(t, shared, "shared", `{"owner":"alice"}`)
	g.Eventually(func() error {
		recs := records(g, ns)
		if len(recs) != 1 {
			return fmt.Errorf("%d records", len(recs))
		}
		if got := pointers(recs[0]); len(got) != 2 {
			return fmt.Errorf("fields %v, want the kept change and the new one", got)
		}
		if a := annotations(g, shared, "shared"); a[refluxv1.HeldByAnnotation] != recs[0].Name {
			return fmt.Errorf("not held: %v", a)
		}
		return nil
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Expect(pointers(records(g, ns)[0])).To(ConsistOf("/data/mode", "/data/owner"))
	g.Eventually(func() string { return drifted(g, app) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))
}

// TestCrossNamespaceSourceRefIsRefused: with --no-cross-namespace-refs
// reflux refuses what kustomize-controller refuses, with Flux's reason and
// message.
func TestCrossNamespaceSourceRefIsRefused(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, src := "team-c", "team-c-sources"
	newTenant(t, ns)
	g.Expect(env.CreateNamespace(t.Context(), src)).To(Succeed())
	app := govern(t, ns, governOptions{sourceNamespace: src, unready: true,
		objects: map[string]string{"settings.yaml": configMap(ns, "settings")}})

	msg := fmt.Sprintf("can't access 'GitRepository/%s/%s', cross-namespace references have been blocked", src, app.Source.Name)
	g.Eventually(func() string { return app.Condition(g, app.Name, meta.ReadyCondition) }, fixture.Timeout, fixture.Interval).Should(
		Equal("False/"+apiacl.AccessDeniedReason+": "+msg), "Flux refuses it")
	g.Eventually(func() string { return drifted(g, app) }, fixture.Timeout, fixture.Interval).Should(
		Equal("Unknown/"+apiacl.AccessDeniedReason+": "+msg), "and so does reflux, in the same words")
}

// TestDefaultServiceAccountWhenNoneIsSet: a Kustomization that names no
// ServiceAccount is acted on as --default-service-account in its
// namespace, not as reflux: reflux could patch the object itself.
func TestDefaultServiceAccountWhenNoneIsSet(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, shared := "team-d", "team-d-shared"
	newTenant(t, ns)
	g.Expect(env.CreateNamespace(t.Context(), shared)).To(Succeed())
	grant(t, ns, shared)
	app := govern(t, ns, governOptions{objects: map[string]string{"shared.yaml": configMap(shared, "shared")}})
	revoke(t, ns, shared)

	edit(t, shared, "shared", `{"mode":"live"}`)
	g.Eventually(func() string { return drifted(g, app) }, fixture.Timeout, fixture.Interval).Should(And(
		HavePrefix("Unknown/"+refluxv1.ImpersonationForbiddenReason),
		ContainSubstring(tenantUser(ns)+` cannot patch resource "configmaps"`)))
	g.Expect(annotations(g, shared, "shared")).NotTo(HaveKey(refluxv1.ReconcileAnnotation), "no hold")
}
