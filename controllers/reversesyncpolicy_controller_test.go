package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

const timeout = 30 * time.Second

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test-" + rand.String(6)}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), ns) })
	return ns.Name
}

// waitForCondition waits until the policy has observed its generation and
// carries a condition of the given type, status and reason.
func waitForCondition(g *WithT, key client.ObjectKey, condType string, status metav1.ConditionStatus, reason string) *refluxv1.ReverseSyncPolicy {
	obj := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() error {
		if err := k8sClient.Get(context.Background(), key, obj); err != nil {
			return err
		}
		c := conditions.Get(obj, condType)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition %s is %+v", condType, c)
		}
		return nil
	}, timeout, 100*time.Millisecond).Should(Succeed())
	return obj
}

func kustomization(ns, name, repo string, labels map[string]string, optIn bool) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: time.Minute},
			Path:      "./",
			Prune:     true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repo},
		},
	}
	if optIn {
		ks.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
	}
	return ks
}

func gitRepository(ns, name, branch string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{
			URL:       "http://127.0.0.1:1/repo.git",
			Interval:  metav1.Duration{Duration: time.Minute},
			Reference: &sourcev1.GitRepositoryRef{Branch: branch},
		},
	}
}

func TestPolicyReadyCountsGovernedKustomizations(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	apps := map[string]string{"tier": "apps"}
	g.Expect(k8sClient.Create(ctx, gitRepository(ns, "repo", "main"))).To(Succeed())
	g.Expect(k8sClient.Create(ctx, kustomization(ns, "opted-in", "repo", apps, true))).To(Succeed())
	g.Expect(k8sClient.Create(ctx, kustomization(ns, "not-opted-in", "repo", apps, false))).To(Succeed())
	g.Expect(k8sClient.Create(ctx, kustomization(ns, "other-tier", "repo", map[string]string{"tier": "infra"}, true))).To(Succeed())

	p := validPolicy(ns, "apps")
	p.Spec.KustomizationSelector = metav1.LabelSelector{MatchLabels: apps}
	g.Expect(k8sClient.Create(ctx, p)).To(Succeed())
	obj := waitForCondition(g, client.ObjectKeyFromObject(p), meta.ReadyCondition, metav1.ConditionTrue, refluxv1.ValidPolicyReason)
	// The patch helper writes conditions and the other status fields in
	// separate requests, so observedGeneration may land a moment later.
	g.Eventually(func() int64 {
		_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(p), obj)
		return obj.Status.ObservedGeneration
	}, timeout, 100*time.Millisecond).Should(Equal(obj.Generation))
	// The reconciler's cache may see the Kustomizations after the policy;
	// their watch events bring the count up to date.
	g.Eventually(func() int32 {
		_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(p), obj)
		return obj.Status.Kustomizations
	}, timeout, 100*time.Millisecond).Should(Equal(int32(1)))
	g.Expect(conditions.Has(obj, meta.StalledCondition)).To(BeFalse())

	// Opting in a second Kustomization is seen without touching the policy.
	ks := &kustomizev1.Kustomization{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "not-opted-in"}, ks)).To(Succeed())
	ks.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
	g.Expect(k8sClient.Update(ctx, ks)).To(Succeed())
	g.Eventually(func() int32 {
		_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(p), obj)
		return obj.Status.Kustomizations
	}, timeout, 100*time.Millisecond).Should(Equal(int32(2)))
}

func TestPolicyStalledOnMalformedGlob(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	p := validPolicy(ns, "bad-glob")
	p.Spec.Rules[0].Paths = []string{"apps/[z-"}
	g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	obj := waitForCondition(g, client.ObjectKeyFromObject(p), meta.StalledCondition, metav1.ConditionTrue, refluxv1.InvalidPolicyReason)
	g.Expect(conditions.GetMessage(obj, meta.StalledCondition)).To(ContainSubstring("spec.rules[0].paths[0]"))
	g.Expect(conditions.IsFalse(obj, meta.ReadyCondition)).To(BeTrue())
}

func TestPolicyStalledOnBranchPrefixConflict(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	g.Expect(k8sClient.Create(ctx, gitRepository(ns, "repo", "release/prod"))).To(Succeed())
	g.Expect(k8sClient.Create(ctx, kustomization(ns, "app", "repo", nil, true))).To(Succeed())
	p := validPolicy(ns, "clash")
	p.Spec.Git.BranchPrefix = "release/"
	g.Expect(k8sClient.Create(ctx, p)).To(Succeed())
	obj := waitForCondition(g, client.ObjectKeyFromObject(p), meta.StalledCondition, metav1.ConditionTrue, refluxv1.BranchPrefixConflictReason)
	g.Expect(conditions.GetMessage(obj, meta.ReadyCondition)).To(ContainSubstring(`source branch "release/prod"`))
}

func TestPolicyWaitsForSigningSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	p := validPolicy(ns, "signed")
	p.Spec.Git.SigningKey = &refluxv1.SigningKey{Type: refluxv1.SSHSigningKey}
	p.Spec.Git.SigningKey.SecretRef.Name = "signing-key"
	g.Expect(k8sClient.Create(ctx, p)).To(Succeed())
	obj := waitForCondition(g, client.ObjectKeyFromObject(p), meta.ReadyCondition, metav1.ConditionFalse, refluxv1.SigningKeyNotFoundReason)
	g.Expect(conditions.GetMessage(obj, meta.ReadyCondition)).To(ContainSubstring("not found"))
	g.Expect(conditions.Has(obj, meta.StalledCondition)).To(BeFalse(), "a missing Secret is fixable without a spec change")

	// A Secret with the wrong content is reported with the cause.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "signing-key"},
		Data:       map[string][]byte{"git.ssh": []byte("not a key")},
	}
	g.Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	g.Eventually(func() string {
		_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(p), obj)
		return conditions.GetMessage(obj, meta.ReadyCondition)
	}, timeout, 100*time.Millisecond).Should(ContainSubstring("not a usable ssh signing key"))

	// Fixing the Secret makes the policy Ready at the next retry.
	secret.Data["git.ssh"] = sshKeyPEM(t)
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	waitForCondition(g, client.ObjectKeyFromObject(p), meta.ReadyCondition, metav1.ConditionTrue, refluxv1.ValidPolicyReason)
}
