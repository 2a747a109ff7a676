package fleet

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/fleet"
)

const (
	// secretName is the hub's kubeconfig Secret for the spoke.
	secretName = "spoke-kubeconfig"
	// tenant is the ServiceAccount Flux, and so reflux, impersonate in
	// the spoke.
	tenant = "tenant"
	// aliceName is a person who edits in the spoke.
	aliceName = "alice@example.com"
)

// flagFiles is a tree of one ConfigMap per name, ENABLED "false" in Git.
func flagFiles(dir string, names ...string) map[string]string {
	files := map[string]string{dir + "/kustomization.yaml": fixture.Kustomization("flags.yaml")}
	var body string
	for _, n := range names {
		body += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + n + "\ndata:\n  ENABLED: \"false\"\n"
	}
	files[dir+"/flags.yaml"] = body
	return files
}

// newSpokeApp makes namespace ns in both clusters, the hub's kubeconfig
// Secret for the spoke in it, and the tenant's RBAC in the spoke, then an
// app whose Kustomizations (paths, by name) Flux applies to the spoke as
// the tenant.
func newSpokeApp(t *testing.T, ns string, paths map[string]string, files map[string]string) *fixture.App {
	t.Helper()
	return newSpokeAppWith(t, ns, nil, paths, files)
}

// newSpokeAppWith is newSpokeApp whose kubeconfig Secret holds
// kubeconfig; nil makes one for a ServiceAccount of its own.
func newSpokeAppWith(t *testing.T, ns string, kubeconfig []byte, paths map[string]string, files map[string]string) *fixture.App {
	t.Helper()
	return newRemoteApp(t, theSpoke(), ns, kubeconfig, paths, files, fixture.AppOptions{})
}

// newRemoteApp is newSpokeAppWith for any spoke, with the app's options
// besides its tree and the Kustomizations' kubeConfig.
func newRemoteApp(t *testing.T, in remote, ns string, kubeconfig []byte, paths map[string]string, files map[string]string,
	o fixture.AppOptions) *fixture.App {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	g.Expect(in.env.CreateNamespace(ctx, ns)).To(Succeed())
	if kubeconfig == nil {
		var err error
		_, kubeconfig, err = remoteKubeconfig(ctx, in, hubUser+"-"+ns)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName},
		Data: map[string][]byte{"value": kubeconfig, fleet.AuditTokenKey: []byte(in.auditToken)}})).To(Succeed())
	// A Role of its own: the spoke runs no aggregation controller to fill
	// the built-in admin ClusterRole.
	g.Expect(in.env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenant},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}}}})).To(Succeed())
	g.Expect(in.env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tenant},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenant, Namespace: ns}}})).To(Succeed())
	o.Files, o.Paths = files, paths
	customize := o.Kustomization
	o.Kustomization = func(k *kustomizev1.Kustomization) {
		k.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: secretName}}
		k.Spec.ServiceAccountName = tenant
		if customize != nil {
			customize(k)
		}
	}
	return fixture.NewApp(t, env, ns, o)
}

// TestSpokeEditIsHeldRecordedAndProposed (issue 24 §3): a live edit in
// the spoke is held in the spoke, as the Kustomization's tenant, recorded
// in the hub with its origin and the cluster it happened in, and proposed
// as a branch. Nothing of it is looked for in the hub.
func TestSpokeEditIsHeldRecordedAndProposed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "edge"
	f := newSpokeApp(t, ns, map[string]string{"edge": "./edge"}, flagFiles("edge", "checkout-flags"))
	inSpoke := fixture.Namespace{Env: spoke, Name: ns}
	// Flux applied the ConfigMap to the spoke, and only there.
	inSpoke.ConfigMap(g, "checkout-flags")
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "checkout-flags"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing applied to the hub: %v", err)

	// Alice edits it in the spoke, as herself.
	alice, err := spoke.AddUser(aliceName, "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	since := time.Now()
	_, err = spoke.KubectlAs(ctx, alice, "-n", ns, "patch", "configmap/checkout-flags", "--field-manager=kubectl-edit",
		"-p", `{"data":{"ENABLED":"true"}}`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.WaitRecord(g, "ConfigMap", "checkout-flags", fixture.All(fixture.HasField("/data/ENABLED"),
		fixture.InState(refluxv1.DriftProposed), fixture.Pushed, fixture.Attributed("/data/ENABLED")))
	g.Expect(rec.Spec.Kustomization.Cluster).To(Equal("Secret/" + secretName))
	field, err := fixture.Field(rec, "/data/ENABLED")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(field.LiveValue).To(Equal(`"true"`))
	// Named from the spoke's audit log, which its apiserver sends to the
	// hub's reflux with the token its kubeconfig Secret holds.
	g.Expect(field.Modifier.User).To(Equal(aliceName))
	g.Expect(field.Origin).NotTo(BeNil())
	g.Expect(field.Origin.File).To(Equal("edge/flags.yaml"))
	g.Expect(field.Origin.Line).To(BeNumerically(">", 0))
	g.Expect(rec.Status.Branch).NotTo(BeEmpty())
	g.Expect(fixture.Held(inSpoke.ConfigMap(g, "checkout-flags"))).To(BeTrue(), "held in the spoke")

	// The dry run and the hold went to the spoke as the tenant, as Flux's
	// applies do (spec.serviceAccountName).
	asTenant := spokeEvents(g, func(e auditv1.Event) bool {
		return strings.HasPrefix(e.UserAgent, "reflux") && e.ImpersonatedUser != nil &&
			e.ImpersonatedUser.Username == "system:serviceaccount:"+ns+":"+tenant && e.ObjectRef != nil &&
			e.ObjectRef.Name == "checkout-flags" && e.Verb == "patch" && !e.RequestReceivedTimestamp.Time.Before(since)
	})
	g.Expect(asTenant).NotTo(BeEmpty(), "reflux's patches in the spoke impersonate the tenant")
	g.Expect(f.Condition(g, "edge", refluxv1.DriftedCondition)).To(HavePrefix("True/"))
	// What the README's Fleets section shows.
	out, err := env.Kubectl(ctx, "-n", ns, "get", "drifts", "-o", "wide")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("Secret/" + secretName))
	t.Logf("kubectl -n %s get drifts -o wide:\n%s", ns, out)
}

// TestSpokeSecretWriteIsReportedFromItsAuditLog (issue 24 §2): under the
// default --secrets=metadata reflux never reads a Secret, in the hub or a
// spoke. A write to a Secret Flux applied to the spoke is recorded in the
// hub from the audit events the spoke's apiserver sends with its token:
// the whole object, content unknown, attributed, at the document that
// declares it, and never held.
func TestSpokeSecretWriteIsReportedFromItsAuditLog(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "vault"
	files := map[string]string{
		"vault/kustomization.yaml": fixture.Kustomization("api-key.yaml"),
		"vault/api-key.yaml":       "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-key\ntype: Opaque\ndata:\n  KEY: Z2l0\n",
	}
	f := newSpokeApp(t, ns, map[string]string{"vault": "./vault"}, files)
	key := client.ObjectKey{Namespace: ns, Name: "api-key"}
	g.Eventually(func() error { return spoke.Client.Get(ctx, key, &corev1.Secret{}) }, fixture.Timeout, fixture.Interval).
		Should(Succeed(), "Flux applied the Secret to the spoke")

	alice, err := spoke.AddUser(aliceName, "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = spoke.KubectlAs(ctx, alice, "-n", ns, "patch", "secret/api-key", "--type=merge", "-p", `{"data":{"KEY":"aG90Zml4"}}`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.WaitRecord(g, "Secret", "api-key", fixture.All(fixture.HasField(refluxv1.WholeObjectPointer),
		fixture.InState(refluxv1.DriftDetected)))
	g.Expect(rec.Spec.Kustomization.Cluster).To(Equal("Secret/" + secretName))
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	fl := rec.Spec.Fields[0]
	g.Expect(fl.ContentUnknown()).To(BeTrue(), "the whole object, changed: %+v", fl)
	g.Expect(fl.Modifier).NotTo(BeNil())
	g.Expect(fl.Modifier.User).To(Equal(aliceName), "named from the spoke's audit log")
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("vault/api-key.yaml"))
	g.Expect(fl.LiveValue+fl.GitValue).To(BeEmpty(), "reflux never read a value")
	g.Expect(rec.Status.HeldSince).To(BeNil())
	live := &corev1.Secret{}
	g.Expect(spoke.Client.Get(ctx, key, live)).To(Succeed())
	g.Expect(fixture.Held(live)).To(BeFalse())
	g.Expect(env.Client.Get(ctx, key, &corev1.Secret{})).NotTo(Succeed(), "nothing of it in the hub")
}

// TestSpokeThatStopsAnsweringLosesNothing (issue 24 §2): the spoke stops
// answering the hub. The Kustomization says so (Drifted=Unknown,
// ClusterUnreachable), the hold reflux took before stays, and a change
// made in the spoke meanwhile is recorded once the spoke answers again.
func TestSpokeThatStopsAnsweringLosesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := "away"
	f := newSpokeApp(t, ns, map[string]string{"away": "./away"}, flagFiles("away", "before", "during"))
	inSpoke := fixture.Namespace{Env: spoke, Name: ns}
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before"}}
	fixture.Edit(g, spoke.Client, "kubectl-edit", before, func() { before.Data["ENABLED"] = "true" })
	waitHeld(g, f, inSpoke, "before")

	link.Stall()
	stalled := true
	defer func() {
		if stalled {
			link.Resume()
		}
	}()
	g.Eventually(func() string { return f.Condition(g, "away", refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("Unknown/" + refluxv1.ClusterUnreachableReason + ": "))
	t.Logf("Drifted while the spoke does not answer: %s", f.Condition(g, "away", refluxv1.DriftedCondition))
	during := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "during"}}
	fixture.Edit(g, spoke.Client, "kubectl-edit", during, func() { during.Data["ENABLED"] = "true" })
	g.Consistently(func() []refluxv1.Drift { return f.Records(g, "ConfigMap", "during") }, 2*time.Second, 250*time.Millisecond).
		Should(BeEmpty(), "nothing is known of the spoke while it does not answer")
	g.Expect(fixture.Held(inSpoke.ConfigMap(g, "before"))).To(BeTrue(), "the hold stays where it is")

	link.Resume()
	stalled = false
	waitHeld(g, f, inSpoke, "during")
	g.Eventually(func() string { return f.Condition(g, "away", refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/"))
	g.Expect(f.Records(g, "ConfigMap", "before")).To(HaveLen(1))
}

// TestSpokeAPIServerRestartLosesNothing (issue 24 §3): the spoke's
// kube-apiserver is stopped, then started again. While it is away the
// Kustomization says so and the hold taken before stays; an edit made as
// soon as it is back is held and recorded, whether or not reflux's
// watches have reconnected yet.
func TestSpokeAPIServerRestartLosesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "restart"
	f := newSpokeApp(t, ns, map[string]string{"restart": "./restart"}, flagFiles("restart", "before", "after"))
	inSpoke := fixture.Namespace{Env: spoke, Name: ns}
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before"}}
	fixture.Edit(g, spoke.Client, "kubectl-edit", before, func() { before.Data["ENABLED"] = "true" })
	waitHeld(g, f, inSpoke, "before")

	g.Expect(spoke.StopAPIServer(ctx)).To(Succeed())
	stopped := true
	defer func() {
		if stopped {
			g.Expect(spoke.StartAPIServer(ctx)).To(Succeed())
		}
	}()
	g.Eventually(func() string { return f.Condition(g, "restart", refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("Unknown/" + refluxv1.ClusterUnreachableReason + ": "))

	g.Expect(spoke.StartAPIServer(ctx)).To(Succeed())
	stopped = false
	after := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after"}}
	fixture.Edit(g, spoke.Client, "kubectl-edit", after, func() { after.Data["ENABLED"] = "true" })
	waitHeld(g, f, inSpoke, "after")
	g.Eventually(func() string { return f.Condition(g, "restart", refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/"))
	g.Expect(fixture.Held(inSpoke.ConfigMap(g, "before"))).To(BeTrue(), "the hold outlived the restart")
	g.Expect(f.Records(g, "ConfigMap", "before")).To(HaveLen(1))
}

// TestKustomizationsOfOneSpokeShareItsWatches (issue 24 §2): two
// Kustomizations target the same spoke through the same Secret; reflux
// keeps one watch of their kind there, not one each, as the spoke's
// audit log counts them.
func TestKustomizationsOfOneSpokeShareItsWatches(t *testing.T) {
	g := NewWithT(t)
	ns := "shared"
	files := flagFiles("a", "a-flags")
	for k, v := range flagFiles("b", "b-flags") {
		files[k] = v
	}
	f := newSpokeApp(t, ns, map[string]string{"a": "./a", "b": "./b"}, files)
	for _, name := range []string{"a-flags", "b-flags"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		fixture.Edit(g, spoke.Client, "kubectl-edit", cm, func() { cm.Data["ENABLED"] = "true" })
		waitHeld(g, f, fixture.Namespace{Env: spoke, Name: ns}, name)
	}
	g.Eventually(openWatches(hubUser+"-"+ns), fixture.Timeout, fixture.Interval).
		Should(Equal(1), "one ConfigMap watch open for both Kustomizations")
}

// openWatches counts the ConfigMap watches reflux keeps open in the
// spoke as ServiceAccount name, from the spoke's audit log.
func openWatches(name string) func(g Gomega) int {
	user := "system:serviceaccount:" + testenv.RefluxNamespace + ":" + name
	return func(g Gomega) int {
		n := 0
		for _, e := range spokeEvents(g, func(e auditv1.Event) bool {
			return e.User.Username == user && strings.HasPrefix(e.UserAgent, "reflux") && e.Verb == "watch" &&
				e.ObjectRef != nil && e.ObjectRef.Resource == "configmaps"
		}) {
			switch e.Stage {
			case auditv1.StageResponseStarted:
				n++
			case auditv1.StageResponseComplete:
				n--
			}
		}
		return n
	}
}

// TestTenantCopiesOfOneKubeconfigShareWatches (issue 24 §2): Flux needs
// the kubeconfig Secret in each Kustomization's namespace, so two tenants
// reaching one spoke hold two copies of it. Being one identity, they
// share one engine: one ConfigMap watch in the spoke for both, and an
// edit in each tenant's namespace is held and recorded in its own.
func TestTenantCopiesOfOneKubeconfigShareWatches(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	first := newSpokeApp(t, "copy-a", map[string]string{"a": "./a"}, flagFiles("a", "a-flags"))
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "copy-a", Name: secretName}, secret)).To(Succeed())
	second := newSpokeAppWith(t, "copy-b", secret.Data["value"], map[string]string{"b": "./b"}, flagFiles("b", "b-flags"))
	for _, app := range []struct {
		f        *fixture.App
		ns, name string
	}{{first, "copy-a", "a-flags"}, {second, "copy-b", "b-flags"}} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app.ns, Name: app.name}}
		fixture.Edit(g, spoke.Client, "kubectl-edit", cm, func() { cm.Data["ENABLED"] = "true" })
		waitHeld(g, app.f, fixture.Namespace{Env: spoke, Name: app.ns}, app.name)
	}
	g.Eventually(openWatches(hubUser+"-copy-a"), fixture.Timeout, fixture.Interval).
		Should(Equal(1), "one ConfigMap watch open for both tenants")
}

// TestRotatedKubeconfigReconnects (issue 24 §2): the kubeconfig Secret
// gets another user's kubeconfig. reflux connects as that user without a
// restart, and governs the spoke through it.
func TestRotatedKubeconfigReconnects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "rotate"
	f := newSpokeApp(t, ns, map[string]string{"rotate": "./rotate"}, flagFiles("rotate", "first", "second"))
	first := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}
	fixture.Edit(g, spoke.Client, "kubectl-edit", first, func() { first.Data["ENABLED"] = "true" })
	waitHeld(g, f, fixture.Namespace{Env: spoke, Name: ns}, "first")

	rotated, kubeconfig, err := spokeKubeconfig(ctx, hubUser+"-"+ns+"-rotated")
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret)).To(Succeed())
	secret.Data["value"] = kubeconfig
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) []auditv1.Event {
		return spokeEvents(g, func(e auditv1.Event) bool {
			return e.User.Username == rotated && strings.HasPrefix(e.UserAgent, "reflux") && e.Verb == "watch"
		})
	}, fixture.Timeout, fixture.Interval).ShouldNot(BeEmpty(), "reflux watches the spoke as the rotated user")

	second := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}}
	fixture.Edit(g, spoke.Client, "kubectl-edit", second, func() { second.Data["ENABLED"] = "true" })
	waitHeld(g, f, fixture.Namespace{Env: spoke, Name: ns}, "second")
	g.Expect(f.Records(g, "ConfigMap", "first")).To(HaveLen(1), "the first record is carried on, not written again")
}

// waitHeld waits until the ENABLED change of the spoke's ConfigMap name
// is recorded in the hub, and the ConfigMap held in the spoke.
func waitHeld(g Gomega, f *fixture.App, inSpoke fixture.Namespace, name string) {
	f.WaitRecord(g, "ConfigMap", name, fixture.HasField("/data/ENABLED"))
	g.Eventually(func() bool { return fixture.Held(inSpoke.ConfigMap(g, name)) }, fixture.Timeout, fixture.Interval).
		Should(BeTrue(), "%s held in the spoke", name)
}

// spokeEvents are the spoke's audit events that match.
func spokeEvents(g Gomega, match func(auditv1.Event) bool) []auditv1.Event {
	evs, err := spoke.AuditEvents(match)
	g.Expect(err).NotTo(HaveOccurred())
	return evs
}

// TestSpokeEditBeforeRefluxConnectsIsAttributed (issue 24 §2): a spoke's
// apiserver sends its audit events from its start, and reflux connects
// to a spoke only once it governs a Kustomization applied there. What it
// heard before, with a token no kubeconfig Secret it had read names, is
// kept for the first that does: an edit made before reflux governed the
// Kustomization is still attributed to its author. A spoke of its own,
// whose token no other test's engine registers.
func TestSpokeEditBeforeRefluxConnectsIsAttributed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const token = "late-spoke-audit-token"
	late, err := testenv.Start(ctx, testenv.Options{WithoutFlux: true, WithoutRefluxCRDs: true,
		AuditWebhook: &testenv.AuditWebhook{URL: "https://" + env.AuditWebhookAddr + "/audit", CA: env.AuditWebhookTLS.CA,
			Token: token}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(late.Stop()).To(Succeed()) })
	g.Expect(late.InstallProfile(ctx, "spoke")).To(Succeed())
	u, err := url.Parse(late.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())
	// Flux and reflux reach it through a link of its own, closed first:
	// the apiserver stops only once their connections are gone.
	lateLink, err := testenv.NewStallProxy(u.Host)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(lateLink.Close()).To(Succeed()) })
	in := remote{env: late, server: "https://" + lateLink.Addr(), auditToken: token}

	// Flux applies the app to the spoke; reflux does not govern it yet.
	ns := "late"
	f := newRemoteApp(t, in, ns, nil, map[string]string{"late": "./late"}, flagFiles("late", "late-flags"),
		fixture.AppOptions{Unwatched: true, Kustomization: func(k *kustomizev1.Kustomization) {
			delete(k.Annotations, refluxv1.ReverseSyncAnnotation)
		}})
	inSpoke := fixture.Namespace{Env: late, Name: ns}
	inSpoke.ConfigMap(g, "late-flags")

	alice, err := late.AddUser(aliceName, "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = late.KubectlAs(ctx, alice, "-n", ns, "patch", "configmap/late-flags", "--field-manager=kubectl-edit",
		"-p", `{"data":{"ENABLED":"true"}}`)
	g.Expect(err).NotTo(HaveOccurred())
	// reflux heard of it, from a token it cannot place yet.
	g.Eventually(func() (string, error) {
		b, err := hubReflux.Log()
		return string(b), err
	}, fixture.Timeout, fixture.Interval).Should(ContainSubstring("its writes are kept for the first such Secret"))
	g.Expect(fixture.Held(inSpoke.ConfigMap(g, "late-flags"))).To(BeFalse(), "nothing governs it yet")

	// Opted in now: reflux connects, finds the edit, and names alice.
	k := f.Kustomizations["late"].DeepCopy()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(k), k)).To(Succeed())
	patch := client.MergeFrom(k.DeepCopy())
	k.SetAnnotations(map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled})
	g.Expect(env.Client.Patch(ctx, k, patch)).To(Succeed())
	rec := f.WaitRecord(g, "ConfigMap", "late-flags", fixture.All(fixture.HasField("/data/ENABLED"),
		fixture.Attributed("/data/ENABLED")))
	field, err := fixture.Field(rec, "/data/ENABLED")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(field.Modifier.User).To(Equal(aliceName), "named from what the spoke sent before reflux connected")
	g.Expect(rec.Spec.Kustomization.Cluster).To(Equal("Secret/" + secretName))
}

// TestWorkloadIdentityKustomizationIsGoverned (issue 24 §2): a
// Kustomization whose spec.kubeConfig.configMapRef names a workload
// identity ConfigMap (provider generic: a token of the ServiceAccount the
// ConfigMap names) is applied by kustomize-controller and governed by
// reflux through the same identity: a live edit is held as that identity
// and recorded in the hub, naming the ConfigMap as its cluster. The
// cluster the identity reaches is the hub itself, the one apiserver of
// this suite that trusts the hub's ServiceAccount tokens.
func TestWorkloadIdentityKustomizationIsGoverned(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "identity"
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	// The identity Flux, and so reflux, reach the cluster as; Flux's
	// identities in a spoke are commonly its admins.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spoke-applier"}}
	g.Expect(env.Client.Create(ctx, sa)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-spoke-applier"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spoke-identity"},
		Data: map[string]string{meta.KubeConfigKeyProvider: "generic", meta.KubeConfigKeyAddress: env.Config.Host,
			meta.KubeConfigKeyCACert: string(env.Config.CAData), meta.KubeConfigKeyServiceAccountName: sa.Name}})).To(Succeed())
	f := fixture.NewApp(t, env, ns, fixture.AppOptions{Files: flagFiles("identity", "identity-flags"),
		Paths: map[string]string{"identity": "./identity"},
		Kustomization: func(k *kustomizev1.Kustomization) {
			k.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "spoke-identity"}}
		}})
	applier := "system:serviceaccount:" + ns + ":" + sa.Name
	applied := func(e auditv1.Event) bool {
		return e.User.Username == applier && e.ObjectRef != nil && e.ObjectRef.Name == "identity-flags" && e.Verb == "patch"
	}
	evs, err := env.AuditEvents(applied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(evs).NotTo(BeEmpty(), "kustomize-controller applied as the workload identity")

	alice, err := env.AddUser(aliceName, "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	since := time.Now()
	_, err = env.KubectlAs(ctx, alice, "-n", ns, "patch", "configmap/identity-flags", "--field-manager=kubectl-edit",
		"-p", `{"data":{"ENABLED":"true"}}`)
	g.Expect(err).NotTo(HaveOccurred())
	rec := f.WaitRecord(g, "ConfigMap", "identity-flags", fixture.All(fixture.HasField("/data/ENABLED"),
		fixture.InState(refluxv1.DriftHeld)))
	g.Expect(rec.Spec.Kustomization.Cluster).To(Equal("ConfigMap/spoke-identity"))
	g.Expect(fixture.Held(f.ConfigMap(g, "identity-flags"))).To(BeTrue())
	held, err := env.AuditEvents(func(e auditv1.Event) bool {
		return e.User.Username == applier && strings.HasPrefix(e.UserAgent, "reflux") && e.ObjectRef != nil &&
			e.ObjectRef.Name == "identity-flags" && e.Verb == "patch" && !e.RequestReceivedTimestamp.Time.Before(since)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(held).NotTo(BeEmpty(), "reflux held it as the workload identity, not as itself")
}
