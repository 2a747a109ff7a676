package manager

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// TestImpersonationAgainstTheAPIServer runs the engine's impersonated
// dry run and hold against the real apiserver, as a tenant that may touch
// one namespace: both succeed there, and elsewhere the refusal names the
// missing verb and resource.
func TestImpersonationAgainstTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	own, other := "imp-team-a", "imp-team-b"
	for _, ns := range []string{own, other} {
		g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	g.Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "tenant"}})).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "tenant"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch"}}}}
	g.Expect(k8sClient.Create(ctx, role)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: own, Name: "tenant"}}})).To(Succeed())

	scheme := runtime.NewScheme()
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	httpClient, err := rest.HTTPClientFor(testEnv.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(testEnv.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	clients, err := tenancy.NewClients(testEnv.Config, client.Options{Scheme: scheme, Mapper: mapper}, 4)
	g.Expect(err).NotTo(HaveOccurred())
	base, err := drift.New(k8sClient)
	g.Expect(err).NotTo(HaveOccurred())
	imp := impersonation{clients: clients, detector: base}
	user := "system:serviceaccount:" + own + ":tenant"

	for _, ns := range []string{own, other} {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Data: map[string]string{"k": "git"}}
		g.Expect(k8sClient.Patch(ctx, cm, client.Apply, client.FieldOwner("kustomize-controller"))).To(Succeed())
		live := &unstructured.Unstructured{}
		live.SetAPIVersion("v1")
		live.SetKind("ConfigMap")
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), live)).To(Succeed())
		desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "shared", "namespace": ns}, "data": map[string]any{"k": "git"}}}

		det, err := imp.Detector(user)
		g.Expect(err).NotTo(HaveOccurred())
		_, detectErr := det.Detect(ctx, drift.Input{Desired: desired, Live: live})
		h, err := imp.Holder(user)
		g.Expect(err).NotTo(HaveOccurred())
		ref := refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "shared", UID: string(live.GetUID())}
		_, holdErr := h.Hold(ctx, ref, refluxv1.HoldAnnotations("rec", time.Now(), false))
		releaseErr := h.Release(ctx, ref)
		if ns == own {
			g.Expect(detectErr).NotTo(HaveOccurred(), "the tenant may dry-run in its namespace")
			g.Expect(holdErr).NotTo(HaveOccurred())
			g.Expect(releaseErr).NotTo(HaveOccurred())
			continue
		}
		for what, err := range map[string]error{"dry run": detectErr, "hold": holdErr, "release": releaseErr} {
			f, ok := tenancy.AsForbidden(err, user)
			g.Expect(ok).To(BeTrue(), "%s in %s: %v", what, ns, err)
			g.Expect(f.Verb).To(Equal("patch"), what)
			g.Expect(f.Resource).To(Equal("configmaps"), what)
			g.Expect(f.Namespace).To(Equal(other), what)
			g.Expect(f.Name).To(Equal("shared"), what)
			g.Expect(f.Subject).To(Equal(user), "%s: the apiserver names the impersonated user", what)
		}
		got := &corev1.ConfigMap{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
		g.Expect(got.Annotations).NotTo(HaveKey(refluxv1.ReconcileAnnotation), "no hold where the tenant may not write")
	}
}

// TestImpersonationNeedsTheVerb: without config/rbac's impersonate on
// serviceaccounts, the apiserver refuses reflux itself, and the refusal
// says so rather than blaming the tenant.
func TestImpersonationNeedsTheVerb(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "imp-noverb"
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	u, err := testEnv.ControlPlane.AddUser(envtest.User{Name: "reflux-without-impersonate"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	httpClient, err := rest.HTTPClientFor(testEnv.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(testEnv.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	clients, err := tenancy.NewClients(u.Config(), client.Options{Scheme: scheme, Mapper: mapper}, 1)
	g.Expect(err).NotTo(HaveOccurred())
	user := "system:serviceaccount:" + ns + ":tenant"
	h, err := impersonation{clients: clients}.Holder(user)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = h.Hold(ctx, refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "any", UID: "0"}, refluxv1.HoldAnnotations("rec", time.Now(), false))
	f, ok := tenancy.AsForbidden(err, user)
	g.Expect(ok).To(BeTrue(), "%v", err)
	// The legacy check says "impersonate" on serviceaccounts; the
	// apiserver's constrained impersonation (KEP-5284) reports
	// "impersonate-on:serviceaccount:patch" on the object's resource.
	g.Expect(f.Verb).To(HavePrefix("impersonate"))
	g.Expect(f.Subject).To(Equal("reflux-without-impersonate"))
	g.Expect(f.Error()).To(ContainSubstring("to act as " + user))
}
