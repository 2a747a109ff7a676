package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// Where the install lives, as `flux create source git` and `flux create
// kustomization` would put it.
const (
	fluxNamespace = "flux-system"
	installName   = "reflux"
	installRepo   = "reflux.git"
	// installApp labels the install Kustomization (fixture.AppLabel), for
	// the policy that governs reflux's own install.
	installApp = "reflux-install"
	// driftsCRD is the CRD the upgrade adds a field to.
	driftsCRD = "drifts.reflux.dev"
	// upgradeField is the field the upgrade's CRD gains.
	upgradeField = "ticket"
)

// TestInstallUpgradeUninstallThroughFlux installs reflux as the README's
// Install section says, runs it as the ServiceAccount Flux created, lets
// it govern an app and its own install, upgrades it with a new tag whose
// CRD gains a field, and uninstalls it in the documented order, leaving
// nothing of reflux behind.
func TestInstallUpgradeUninstallThroughFlux(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	release(t, "v0.1.0", nil)
	ks := install(t, g, "v0.1.0")
	expectInstalled(g, ks)

	// reflux runs under the token of the ServiceAccount Flux created, with
	// the RBAC Flux applied, and governs an app.
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux",
		Kubeconfig: testenv.ServiceAccountUser(testenv.RefluxNamespace, testenv.RefluxServiceAccount)})
	app := fixture.NewApp(t, env, "shop", fixture.AppOptions{Dir: "testdata/app", ReportOnly: true})
	flags := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app.Name, Name: "checkout-flags"}}
	fixture.HeldEdit(g, env, env.Client, "kubectl-edit", app.Kustomization(), flags, func() { flags.Data["NEW_CHECKOUT"] = "true" })
	app.WaitRecord(g, "ConfigMap", flags.Name, fixture.HasField("/data/NEW_CHECKOUT"))

	// reflux governs the Kustomization that installed it: an edit of its
	// own Deployment is recorded and held, Flux still reconciles the
	// install, and reflux goes on recording the app's changes.
	self := fixture.Policy(fluxNamespace, installName, map[string]string{fixture.AppLabel: installApp})
	self.Spec.Git.ReportOnly = true
	g.Expect(env.Client.Create(ctx, self)).To(Succeed())
	own := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.RefluxNamespace, Name: "reflux-controller"}}
	fixture.HeldEdit(g, env, env.Client, "kubectl-edit", ks, own, func() {
		grace := int64(30)
		own.Spec.Template.Spec.TerminationGracePeriodSeconds = &grace
	})
	flux := fixture.Namespace{Env: env, Name: fluxNamespace}
	flux.WaitRecord(g, "Deployment", own.Name, fixture.HasField("/spec/template/spec/terminationGracePeriodSeconds"))
	// reflux may not watch the CRDs and cluster RBAC it is installed with,
	// and says so on the Kustomization, naming the fix.
	g.Eventually(func() *metav1.Condition {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
		return apimeta.FindStatusCondition(ks.Status.Conditions, refluxv1.DriftedCondition)
	}, fixture.Timeout, fixture.Interval).Should(And(
		HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", refluxv1.WatchForbiddenReason),
		HaveField("Message", ContainSubstring("customresourcedefinitions")),
		HaveField("Message", ContainSubstring(refluxv1.WorkloadsAggregationLabel))))
	g.Expect(env.Reconcile(ctx, ks)).To(Succeed())
	g.Expect(env.WaitForReady(ctx, ks)).To(Succeed(), "Flux reconciles reflux's install while reflux holds its Deployment")
	app.AddKey(g, env.Client, flags.Name, "AFTER_SELF_HOLD", "1")
	app.WaitRecord(g, "ConfigMap", flags.Name, fixture.HasField("/data/AFTER_SELF_HOLD"))

	// The upgrade: a new tag whose Drift CRD gains a field keeps the
	// records and policies, and reflux keeps working under it.
	before := map[types.UID]string{}
	for _, ns := range []string{app.Name, fluxNamespace} {
		list := &refluxv1.DriftList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, d := range list.Items {
			before[d.UID] = ns + "/" + d.Name
		}
	}
	g.Expect(before).To(HaveLen(2), "the app's record and the install's")
	release(t, "v0.2.0", map[string]string{"config/crd/bases/reflux.dev_drifts.yaml": crdWithField(t)})
	upgrade(g, ks, "v0.2.0")
	g.Expect(crdFields(g)).To(HaveKey(upgradeField), "the upgrade's CRD is served")
	for uid, name := range before {
		ns, n, _ := strings.Cut(name, "/")
		d := &refluxv1.Drift{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, d)).To(Succeed(), "record %s kept", name)
		g.Expect(d.UID).To(Equal(uid), "record %s is the same object", name)
	}
	for _, p := range []client.Object{app.Policy, self} {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), &refluxv1.ReverseSyncPolicy{})).To(Succeed(), "policy %s kept", p.GetName())
	}
	app.AddKey(g, env.Client, flags.Name, "AFTER_UPGRADE", "1")
	app.WaitRecord(g, "ConfigMap", flags.Name, fixture.HasField("/data/AFTER_UPGRADE"))

	// The documented uninstall: policies first (reflux stops governing
	// and takes its conditions off the Kustomizations), then the records
	// (each one's finalizer releases its hold), then the install.
	for _, ns := range []string{app.Name, fluxNamespace} {
		g.Expect(env.Client.DeleteAllOf(ctx, &refluxv1.ReverseSyncPolicy{}, client.InNamespace(ns))).To(Succeed())
	}
	for _, k := range []*kustomizev1.Kustomization{app.Kustomization(), ks} {
		g.Eventually(func() []string { return refluxConditions(g, k) }, fixture.Timeout, fixture.Interval).Should(BeEmpty(),
			"reflux's conditions are taken off Kustomization %s once no policy governs it", k.Name)
	}
	for _, ns := range []string{app.Name, fluxNamespace} {
		g.Expect(env.Client.DeleteAllOf(ctx, &refluxv1.Drift{}, client.InNamespace(ns))).To(Succeed())
	}
	g.Eventually(func() int {
		list := &refluxv1.DriftList{}
		g.Expect(env.Client.List(ctx, list)).To(Succeed())
		return len(list.Items)
	}, fixture.Timeout, fixture.Interval).Should(BeZero(), "every record is gone, its finalizer done")
	for _, obj := range []client.Object{flags, own} {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(refluxAnnotations(obj)).To(BeEmpty(), "no hold is left on %s", obj.GetName())
	}
	// The pod goes with the Deployment Flux prunes; the binary stops here.
	g.Expect(r.Stop()).To(Succeed())
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{}))
	}, fixture.Timeout, fixture.Interval).Should(BeTrue(), "Flux finished pruning")
	expectUninstalled(g)

	// With the hold gone, Flux puts Git's value back at its next reconcile.
	app.Reconcile(g, app.Kustomization().Name)
	g.Expect(app.ConfigMap(g, flags.Name).Data).To(HaveKeyWithValue("NEW_CHECKOUT", "false"))
}

// release pushes this checkout's config/, with files (paths from the
// repository's root) written over it, as the tree of the reflux
// repository's main branch, and tags it: a reflux release, as Flux users
// point a GitRepository at one.
func release(t *testing.T, tag string, files map[string]string) {
	t.Helper()
	config, err := filepath.Abs("../../config")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(config)); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteTree(dir, files); err != nil {
		t.Fatal(err)
	}
	head, err := env.Git.PushDir(context.Background(), installRepo, dir)
	if err != nil {
		t.Fatal(err)
	}
	clone := fixture.CloneBranch(t, env, installRepo, testenv.DefaultBranch)
	fixture.Git(t, clone, "tag", tag, head)
	fixture.Git(t, clone, "push", "-q", "origin", tag)
}

// install creates the GitRepository following tag and the Kustomization
// of config/default, as the README's Install section does, and waits
// until Flux reports every object ready. No kubelet runs here, so the
// Kustomization scales reflux's Deployment to zero and the test runs the
// binary in its place; kube-controller-manager aggregates reflux's
// ClusterRoles and brings the Deployment to Available, as on a cluster.
func install(t *testing.T, g Gomega, tag string) *kustomizev1.Kustomization {
	t.Helper()
	ctx := context.Background()
	g.Expect(env.StartControllerManager()).To(Succeed())
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNamespace}}))).To(Succeed())
	src := &sourcev1.GitRepository{}
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: fluxNamespace, Name: installName}, src)
	switch {
	case apierrors.IsNotFound(err):
		src, err = env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: installName, Namespace: fluxNamespace,
			Repo: installRepo, Tag: tag, Interval: time.Hour})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(env.WaitForReady(ctx, src)).To(Succeed())
	default:
		// An earlier test's install left its source, as an uninstall
		// that deletes only the Kustomization does.
		g.Expect(err).NotTo(HaveOccurred())
		follow(g, tag)
	}
	ks, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: installName, Namespace: fluxNamespace, Source: installName, Path: "./config/default", Prune: true,
		Interval: time.Hour,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{fixture.AppLabel: installApp}
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
			k.Spec.Wait = true
			k.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
			k.Spec.Patches = []kustomize.Patch{{
				Patch:  `[{"op": "replace", "path": "/spec/replicas", "value": 0}]`,
				Target: &kustomize.Selector{Kind: "Deployment", Name: "reflux-controller"},
			}}
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, ks)).To(Succeed(), "Flux applied config/default and every object is ready")
	objs, err := env.RenderProfile(ctx, "default")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitAggregated(ctx, objs)).To(Succeed())
	return ks
}

// expectInstalled checks that Flux, not the test, applied reflux: its
// inventory holds the CRDs, the RBAC and the Deployment, which is
// Available.
func expectInstalled(g Gomega, ks *kustomizev1.Kustomization) {
	g.Expect(ks.Status.Inventory).NotTo(BeNil())
	var ids []string
	for _, e := range ks.Status.Inventory.Entries {
		ids = append(ids, e.ID)
	}
	g.Expect(ids).To(ContainElements(
		"_"+driftsCRD+"_apiextensions.k8s.io_CustomResourceDefinition",
		"_reversesyncpolicies.reflux.dev_apiextensions.k8s.io_CustomResourceDefinition",
		testenv.RefluxNamespace+"_"+testenv.RefluxServiceAccount+"__ServiceAccount",
		testenv.RefluxNamespace+"_reflux-controller_apps_Deployment",
	))
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: testenv.RefluxNamespace,
		Name: "reflux-controller"}, dep)).To(Succeed())
	var available bool
	for _, c := range dep.Status.Conditions {
		available = available || (c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue)
	}
	g.Expect(available).To(BeTrue(), "reflux's Deployment is Available")
}

// follow points the GitRepository at tag and waits for its artifact.
func follow(g Gomega, tag string) {
	ctx := context.Background()
	src := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: fluxNamespace, Name: installName}, src)).To(Succeed())
	patch := client.MergeFrom(src.DeepCopy())
	src.Spec.Reference = &sourcev1.GitRepositoryRef{Tag: tag}
	g.Expect(env.Client.Patch(ctx, src, patch)).To(Succeed())
	g.Expect(env.Reconcile(ctx, src)).To(Succeed())
	g.Expect(env.WaitForReady(ctx, src)).To(Succeed())
	g.Expect(src.Status.Artifact.Revision).To(HavePrefix(tag + "@"))
}

// upgrade points the GitRepository at tag and waits until Flux applied it.
func upgrade(g Gomega, ks *kustomizev1.Kustomization, tag string) {
	ctx := context.Background()
	follow(g, tag)
	g.Eventually(func() string {
		g.Expect(env.Reconcile(ctx, ks)).To(Succeed())
		return ks.Status.LastAppliedRevision
	}, fixture.Timeout, fixture.Interval).Should(HavePrefix(tag+"@"), "Flux applied %s", tag)
	g.Expect(env.WaitForReady(ctx, ks)).To(Succeed())
}

// crdWithField is config/'s Drift CRD with one more optional spec field,
// as a new release's CRD gains one.
func crdWithField(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../config/crd/bases/reflux.dev_drifts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) == 0 {
		t.Fatal("the Drift CRD has no versions")
	}
	v := versions[0].(map[string]any)
	if err := unstructured.SetNestedField(v, map[string]any{"type": "string", "description": "added by the upgrade test"},
		"schema", "openAPIV3Schema", "properties", "spec", "properties", upgradeField); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(crd.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// crdFields are the spec fields the served Drift CRD declares.
func crdFields(g Gomega) map[string]any {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Name: driftsCRD}, crd)).To(Succeed())
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	g.Expect(versions).NotTo(BeEmpty())
	fields, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties")
	return fields
}

// refluxConditions are the condition types reflux owns that k carries.
func refluxConditions(g Gomega, k *kustomizev1.Kustomization) []string {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k)).To(Succeed())
	var out []string
	for _, c := range k.Status.Conditions {
		if c.Type == refluxv1.DriftedCondition || c.Type == refluxv1.ReverseSyncedCondition {
			out = append(out, c.Type)
		}
	}
	return out
}

// refluxAnnotations are the annotations of a hold that obj carries.
func refluxAnnotations(obj client.Object) map[string]string {
	out := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		switch k {
		case refluxv1.ReconcileAnnotation, refluxv1.HeldByAnnotation, refluxv1.HeldSinceAnnotation:
			out[k] = v
		}
	}
	return out
}

// expectUninstalled checks that Flux pruned everything config/default
// installs: the namespace with all in it, the CRDs (and with them every
// record and policy) and the cluster-wide RBAC.
func expectUninstalled(g Gomega) {
	ctx := context.Background()
	objs, err := env.RenderProfile(ctx, "default")
	g.Expect(err).NotTo(HaveOccurred())
	for _, u := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		g.Eventually(func() error {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), live)
			if apierrors.IsNotFound(err) {
				return nil
			}
			g.Expect(err).NotTo(HaveOccurred())
			return fmt.Errorf("%s %s is still there: created %s, written by %v", u.GetKind(), u.GetName(),
				live.GetCreationTimestamp(), writers(live))
		}, fixture.Timeout, fixture.Interval).Should(Succeed(), "%s %s is pruned", u.GetKind(), u.GetName())
	}
}

// TestPruneWithRecordsOpen prunes reflux's install while a record holds an
// object, its pod gone first as it goes on a cluster, and checks that
// exactly what the README's Install section lists is left behind, and
// that its commands clear it.
func TestPruneWithRecordsOpen(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	release(t, "v0.3.0", nil)
	ks := install(t, g, "v0.3.0")
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-pruned",
		Kubeconfig: testenv.ServiceAccountUser(testenv.RefluxNamespace, testenv.RefluxServiceAccount)})
	app := fixture.NewApp(t, env, "cart", fixture.AppOptions{Dir: "testdata/app", ReportOnly: true})
	flags := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app.Name, Name: "checkout-flags"}}
	fixture.HeldEdit(g, env, env.Client, "kubectl-edit", app.Kustomization(), flags, func() { flags.Data["NEW_CHECKOUT"] = "true" })
	rec := app.WaitRecord(g, "ConfigMap", flags.Name, fixture.HasField("/data/NEW_CHECKOUT"))
	g.Eventually(func() []string { return refluxConditions(g, app.Kustomization()) }, fixture.Timeout, fixture.Interval).
		Should(ConsistOf(refluxv1.DriftedCondition, refluxv1.ReverseSyncedCondition))

	g.Expect(r.Stop()).To(Succeed())
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{}))
	}, fixture.Timeout, fixture.Interval).Should(BeTrue(), "Flux finished pruning")

	// Left behind: the record on its finalizer, and the CRD with it; the
	// hold; reflux's conditions.
	g.Eventually(func() bool {
		d := &refluxv1.Drift{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rec), d)).To(Succeed())
		return d.DeletionTimestamp != nil
	}, fixture.Timeout, fixture.Interval).Should(BeTrue(), "the record is deleting")
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: driftsCRD}, crd)).To(Succeed())
	g.Expect(crd.GetDeletionTimestamp()).NotTo(BeNil(), "the Drift CRD is Terminating")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(flags), flags)).To(Succeed())
	g.Expect(refluxAnnotations(flags)).To(HaveLen(3), "the hold stays")
	g.Expect(refluxConditions(g, app.Kustomization())).To(ConsistOf(refluxv1.DriftedCondition, refluxv1.ReverseSyncedCondition))

	// Cleared with the README's commands.
	kubectl(g, "-n", app.Name, "annotate", "configmap/"+flags.Name,
		"kustomize.toolkit.fluxcd.io/reconcile-", "reflux.dev/held-by-", "reflux.dev/held-since-")
	kubectl(g, "-n", app.Name, "patch", "drift", rec.Name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	for _, c := range []string{refluxv1.DriftedCondition, refluxv1.ReverseSyncedCondition} {
		kubectl(g, "-n", app.Name, "patch", "kustomization", app.Kustomization().Name, "--subresource=status", "--type=json",
			"-p", `[{"op": "remove", "path": "/status/conditions/`+conditionIndex(g, app.Kustomization(), c)+`"}]`)
	}
	expectUninstalled(g)
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(flags), flags)).To(Succeed())
	g.Expect(refluxAnnotations(flags)).To(BeEmpty())
	g.Expect(refluxConditions(g, app.Kustomization())).To(BeEmpty())
	app.Reconcile(g, app.Kustomization().Name)
	g.Expect(app.ConfigMap(g, flags.Name).Data).To(HaveKeyWithValue("NEW_CHECKOUT", "false"), "Flux governs the object again")
}

// writers names obj's field managers, for a failure to say who kept it.
func writers(obj client.Object) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		out = append(out, m.Manager+" ("+string(m.Operation)+")")
	}
	return out
}

// kubectl runs the real kubectl as the admin.
func kubectl(g Gomega, args ...string) {
	out, err := env.Kubectl(context.Background(), args...)
	g.Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
}

// conditionIndex is the index of condition typ in k's status, as the
// README tells a user to look it up.
func conditionIndex(g Gomega, k *kustomizev1.Kustomization, typ string) string {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k)).To(Succeed())
	for i, c := range k.Status.Conditions {
		if c.Type == typ {
			return strconv.Itoa(i)
		}
	}
	g.Expect(k.Status.Conditions).To(ContainElement(HaveField("Type", typ)))
	return ""
}
