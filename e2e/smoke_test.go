package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	gitImage     = "ghcr.io/stefanprodan/podinfo:6.7.0"
	hotfixImage  = "ghcr.io/stefanprodan/podinfo:6.7.1-hotfix"
	gitReplicas  = 3
	annoDisabled = "kustomize.toolkit.fluxcd.io/reconcile"
	annoSSA      = "kustomize.toolkit.fluxcd.io/ssa"
)

func TestSmokeFixtureIsAppliedFromGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	wantRevision := testenv.DefaultBranch + "@sha1:" + smokeSHA

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(smokeGit), smokeGit)).To(Succeed())
	g.Expect(smokeGit.Status.Artifact).NotTo(BeNil())
	g.Expect(smokeGit.Status.Artifact.Revision).To(Equal(wantRevision))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(smokeKusto), smokeKusto)).To(Succeed())
	g.Expect(smokeKusto.Status.LastAppliedRevision).To(Equal(wantRevision))

	deploy := getDeployment(g, "podinfo")
	g.Expect(*deploy.Spec.Replicas).To(BeEquivalentTo(gitReplicas), "the prod overlay's replicas")
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal(gitImage))
	g.Expect(getConfigMap(g, "podinfo-config").Data).To(Equal(map[string]string{"LOG_LEVEL": "warn"}))
}

// TestFluxRevertsKubectlDrift: kustomize-controller hands fields written by
// managers named kubectl* (Update) to itself before applying, so every
// such edit is undone, added keys and annotations included.
func TestFluxRevertsKubectlDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	deploy := getDeployment(g, "podinfo")
	deploy.Spec.Replicas = new(int32(5))
	deploy.Annotations["smoke.reflux.dev/hotfix"] = "by-hand"
	g.Expect(env.Client.Update(ctx, deploy, client.FieldOwner("kubectl-edit"))).To(Succeed())
	deploy = getDeployment(g, "podinfo")
	deploy.Spec.Template.Spec.Containers[0].Image = hotfixImage
	g.Expect(env.Client.Update(ctx, deploy, client.FieldOwner("kubectl-set"))).To(Succeed())
	cm := getConfigMap(g, "podinfo-config")
	cm.Data["NEW_KEY"] = "added"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

	// The drift is live and owned by the kubectl managers before Flux runs.
	deploy = getDeployment(g, "podinfo")
	g.Expect(*deploy.Spec.Replicas).To(BeEquivalentTo(5))
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal(hotfixImage))
	g.Expect(deploy.Annotations).To(HaveKey("smoke.reflux.dev/hotfix"))
	g.Expect(managers(deploy)).To(ContainElements("kubectl-edit/Update", "kubectl-set/Update"))
	g.Expect(getConfigMap(g, "podinfo-config").Data).To(HaveKey("NEW_KEY"))

	reconcile(g)

	deploy = getDeployment(g, "podinfo")
	g.Expect(*deploy.Spec.Replicas).To(BeEquivalentTo(gitReplicas), "replicas reverted")
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal(gitImage), "image reverted")
	g.Expect(deploy.Annotations).NotTo(HaveKey("smoke.reflux.dev/hotfix"), "added annotation removed")
	// Flux hands the kubectl managers' fields to its own Apply entry
	// before applying, which is why they are reverted at all.
	g.Expect(managers(deploy)).To(Equal([]string{"kustomize-controller/Apply"}))
	cm = getConfigMap(g, "podinfo-config")
	g.Expect(cm.Data).To(Equal(map[string]string{"LOG_LEVEL": "warn"}), "added key removed")
	g.Expect(managers(cm)).To(Equal([]string{"kustomize-controller/Apply"}))
}

// TestReconcileDisabledInClusterHoldsObject: kustomize-controller skips an
// object whose live metadata carries reconcile: disabled, whoever wrote it,
// so a kubectl hotfix survives until the annotation goes.
func TestReconcileDisabledInClusterHoldsObject(t *testing.T) {
	g := NewWithT(t)
	const name = "hold-disabled"
	cm := annotatedDrift(g, name, annoDisabled, "disabled")
	g.Expect(cm.Data["LOG_LEVEL"]).To(Equal("debug"), "the hotfix is held")
	g.Expect(cm.Annotations).To(HaveKeyWithValue(annoDisabled, "disabled"))

	annotate(g, name, annoDisabled, "") // release the hold
	reconcile(g)
	g.Expect(getConfigMap(g, name).Data["LOG_LEVEL"]).To(Equal("info"), "released, Flux reverts")
}

// TestSSAIfNotPresentInClusterDoesNotHold: kustomize-controller reads
// ssa: IfNotPresent from the desired (git) object only, so writing it on
// the live object does not stop the revert.
func TestSSAIfNotPresentInClusterDoesNotHold(t *testing.T) {
	g := NewWithT(t)
	cm := annotatedDrift(g, "hold-if-not-present", annoSSA, "IfNotPresent")
	g.Expect(cm.Data["LOG_LEVEL"]).To(Equal("info"), "reverted despite the live annotation")
	g.Expect(cm.Annotations).To(HaveKeyWithValue(annoSSA, "IfNotPresent"),
		"the annotation itself, owned by reflux, is not in git's set and stays")
}

// TestFieldManagersAfterForcedReconcile records, per writer, what of a
// changed key and an added key survives a forced reconcile.
func TestFieldManagersAfterForcedReconcile(t *testing.T) {
	cases := []struct {
		object, manager string
		apply           bool
		wantLogLevel    string
		wantAddedKept   bool
	}{
		{object: "mgr-kubectl-edit", manager: "kubectl-edit", wantLogLevel: "info"},
		{object: "mgr-kubectl-client-side-apply", manager: "kubectl-client-side-apply", wantLogLevel: "info"},
		{object: "mgr-kubectl-ssa", manager: "kubectl", apply: true, wantLogLevel: "info"},
		{object: "mgr-legacy-app-update", manager: "legacy-app", wantLogLevel: "info", wantAddedKept: true},
		{object: "mgr-legacy-app-ssa", manager: "legacy-app", apply: true, wantLogLevel: "info", wantAddedKept: true},
	}
	for _, tc := range cases {
		t.Run(tc.object, func(t *testing.T) {
			g := NewWithT(t)
			writeDrift(g, tc.object, tc.manager, tc.apply)
			op := "Update"
			if tc.apply {
				op = "Apply"
			}
			cm := getConfigMap(g, tc.object)
			g.Expect(cm.Data).To(Equal(map[string]string{"LOG_LEVEL": "debug", "ADDED": "by-" + tc.manager}))
			g.Expect(managers(cm)).To(ContainElement(tc.manager + "/" + op))

			reconcile(g)
			cm = getConfigMap(g, tc.object)
			g.Expect(cm.Data["LOG_LEVEL"]).To(Equal(tc.wantLogLevel))
			if tc.wantAddedKept {
				g.Expect(cm.Data).To(HaveKeyWithValue("ADDED", "by-"+tc.manager))
				g.Expect(managers(cm)).To(ContainElement(tc.manager + "/" + op))
			} else {
				g.Expect(cm.Data).NotTo(HaveKey("ADDED"))
				g.Expect(managers(cm)).NotTo(ContainElement(tc.manager + "/" + op))
			}
		})
	}
}

// TestGitRepositoryOverSSH proves the SSH side of the git server with
// Flux's identity/known_hosts Secret format.
func TestGitRepositoryOverSSH(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{
		Name: "smoke-ssh", Namespace: smokeNS, Repo: smokeRepo, Transport: testenv.TransportSSH,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Spec.URL).To(HavePrefix("ssh://"))
	g.Expect(env.WaitForReady(ctx, repo)).To(Succeed())
	g.Expect(repo.Status.Artifact).NotTo(BeNil())
	g.Expect(repo.Status.Artifact.Revision).To(Equal(testenv.DefaultBranch + "@sha1:" + smokeSHA))
}

// reconcile forces a reconcile of the smoke Kustomization and requires it
// to end Ready, so a failed apply cannot pass for a revert.
func reconcile(g Gomega) {
	g.Expect(env.Reconcile(context.Background(), smokeKusto)).To(Succeed())
	ready := apimeta.FindStatusCondition(smokeKusto.Status.Conditions, meta.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(BeEquivalentTo("True"), ready.Message)
}

func getDeployment(g Gomega, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: smokeNS, Name: name}, d)).To(Succeed())
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	return d
}

func getConfigMap(g Gomega, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: smokeNS, Name: name}, cm)).To(Succeed())
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm
}

// editLogLevel changes LOG_LEVEL with a plain Update, as kubectl edit does.
func editLogLevel(g Gomega, name, manager, value string) {
	cm := getConfigMap(g, name)
	cm.Data["LOG_LEVEL"] = value
	g.Expect(env.Client.Update(context.Background(), cm, client.FieldOwner(manager))).To(Succeed())
	g.Expect(getConfigMap(g, name).Data["LOG_LEVEL"]).To(Equal(value))
}

// annotatedDrift drifts name's LOG_LEVEL with kubectl edit, sets the
// annotation key live as reflux would, forces a reconcile and returns
// what is left.
func annotatedDrift(g Gomega, name, key, value string) *corev1.ConfigMap {
	editLogLevel(g, name, "kubectl-edit", "debug")
	annotate(g, name, key, value)
	reconcile(g)
	return getConfigMap(g, name)
}

// annotate sets (or, with an empty value, removes) an annotation with a
// merge patch under reflux's field manager, as reflux's hold will.
func annotate(g Gomega, name, key, value string) {
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, key, v)
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = name, smokeNS
	g.Expect(env.Client.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, patch),
		client.FieldOwner("reflux"))).To(Succeed())
}

// writeDrift changes LOG_LEVEL and adds ADDED as manager, with a plain
// Update or a forced server-side apply.
func writeDrift(g Gomega, name, manager string, apply bool) {
	ctx := context.Background()
	added := "by-" + manager
	if !apply {
		cm := getConfigMap(g, name)
		cm.Data["LOG_LEVEL"], cm.Data["ADDED"] = "debug", added
		g.Expect(env.Client.Update(ctx, cm, client.FieldOwner(manager))).To(Succeed())
		return
	}
	ac := corev1ac.ConfigMap(name, smokeNS).WithData(map[string]string{"LOG_LEVEL": "debug", "ADDED": added})
	g.Expect(env.Client.Apply(ctx, ac, client.FieldOwner(manager), client.ForceOwnership)).To(Succeed())
}

// managers lists an object's field managers as "name/operation", with
// "/subresource" appended for entries written through one.
func managers(obj client.Object) []string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		m := f.Manager + "/" + string(f.Operation)
		if f.Subresource != "" {
			m += "/" + f.Subresource
		}
		out = append(out, m)
	}
	return out
}
