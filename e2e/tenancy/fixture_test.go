package tenancy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// newTenant creates a tenant namespace with its ServiceAccount, bound to
// cluster-admin in that namespace only, as `flux create tenant` does.
func newTenant(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenantSA}})).To(Succeed())
	grant(t, ns, ns)
}

// tenantUser is the identity kustomize-controller and reflux impersonate
// for a Kustomization in ns.
func tenantUser(ns string) string { return serviceaccount.MakeUsername(ns, tenantSA) }

func bindingName(tenant string) string { return "tenant-" + tenant }

// grant lets the tenant of namespace tenant do anything in namespace ns,
// and waits until the apiserver's authorizer says so.
func grant(t *testing.T, tenant, ns string) {
	t.Helper()
	g := NewWithT(t)
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bindingName(tenant)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: tenant, Name: tenantSA}}}
	g.Expect(env.Client.Create(context.Background(), rb)).To(Succeed())
	g.Eventually(func() error { return probe(tenant, ns) }, fixture.Timeout, fixture.Interval).Should(Succeed())
}

// revoke takes the grant back, and waits until the authorizer refuses.
func revoke(t *testing.T, tenant, ns string) {
	t.Helper()
	g := NewWithT(t)
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bindingName(tenant)}}
	g.Expect(env.Client.Delete(context.Background(), rb)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsForbidden(probe(tenant, ns)) }, fixture.Timeout, fixture.Interval).Should(BeTrue())
}

// probe makes the request reflux makes, a dry-run apply, as the tenant.
func probe(tenant, ns string) error {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenantUser(tenant)}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rbac-probe"}}
	return c.Patch(context.Background(), cm, client.Apply, client.DryRunAll, client.FieldOwner("probe"), client.ForceOwnership)
}

// configMap is a ConfigMap manifest.
func configMap(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  mode: git\n", name, ns)
}

// governOptions shape the tenant's governed Kustomization.
type governOptions struct {
	// objects are file name → manifest, listed in kustomization.yaml.
	objects map[string]string
	// dir is pushed beside them, unlisted (a chart a HelmRelease names).
	dir string
	// serviceAccount is spec.serviceAccountName; "" leaves it to
	// --default-service-account.
	serviceAccount string
	// sourceNamespace, when set, holds the GitRepository: a
	// cross-namespace sourceRef.
	sourceNamespace string
	// unready skips waiting for Flux and reflux to be ready and clean.
	unready bool
}

// govern pushes a repository, lets Flux apply it as the tenant of ns, and
// governs the Kustomization with a report-only policy. The objects name
// their namespaces themselves: there is no targetNamespace.
func govern(t *testing.T, ns string, o governOptions) *fixture.App {
	t.Helper()
	files := map[string]string{"kustomization.yaml": fixture.Kustomization(slices.Sorted(maps.Keys(o.objects))...)}
	maps.Copy(files, o.objects)
	return fixture.NewApp(t, env, ns, fixture.AppOptions{Dir: o.dir, Files: files, ReportOnly: true,
		SourceNamespace: o.sourceNamespace, Unready: o.unready, Kustomization: func(k *kustomizev1.Kustomization) {
			k.Spec.TargetNamespace = ""
			k.Spec.ServiceAccountName = o.serviceAccount
		}})
}

// drifted returns "status/reason: message" of reflux's Drifted condition.
func drifted(g Gomega, a *fixture.App) string {
	return a.Condition(g, a.Name, refluxv1.DriftedCondition)
}

// edit patches a ConfigMap's data as alice, with kubectl: a change Flux
// reverts at its next apply.
func edit(t *testing.T, ns, name, data string) {
	t.Helper()
	out, err := env.KubectlAs(context.Background(), alice.User, "-n", ns, "patch", "configmap", name, "--type=merge", "-p", `{"data":`+data+`}`)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), string(out))
}

// records lists the drift records of a Kustomization's namespace.
func records(g Gomega, ns string) []refluxv1.Drift {
	list := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// annotations reads a live ConfigMap's annotations.
func annotations(g Gomega, ns, name string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(alice.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm.Annotations
}

// pointers are a record's drifted fields.
func pointers(d refluxv1.Drift) []string {
	var out []string
	for _, f := range d.Spec.Fields {
		out = append(out, f.Pointer)
	}
	return out
}

// writesOf returns the completed requests made to one object, from the
// apiserver's audit log.
func writesOf(g Gomega, ns, name string) []auditv1.Event {
	evs, err := env.AuditEvents(func(e auditv1.Event) bool {
		return e.Stage == auditv1.StageResponseComplete && e.ObjectRef != nil &&
			e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name
	})
	g.Expect(err).NotTo(HaveOccurred())
	return evs
}
