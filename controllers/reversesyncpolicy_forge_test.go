package controllers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestPolicyNamesReadOnlyForgeToken: a pull-request token whose user may
// only read the repository passes for a working token on a read, so it
// used to leave the policy Ready and show only as failed write-backs
// (issue 22 §3). Against a real Gitea, which says the user's permissions
// when the repository is read, the policy is Stalled with TokenReadOnly;
// the same policy with a token that may write is Ready.
func TestPolicyNamesReadOnlyForgeToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, err := testenv.StartGitea(ctx, testenv.GiteaOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = gt.Stop() }) // a stop error changes no result
	tree := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(tree, "cm.yaml"), []byte("kind: ConfigMap\n"), 0o644)).To(Succeed())
	url, _, err := gt.PushDir(ctx, "fleet", tree)
	g.Expect(err).NotTo(HaveOccurred())
	reader, err := gt.AddReader(ctx, "reader", "fleet")
	g.Expect(err).NotTo(HaveOccurred())

	ns := newNamespace(t)
	repo := gitRepository(ns, "fleet", "main")
	repo.Spec.URL = url
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, kustomization(ns, "apps", "fleet", nil, true))).To(Succeed())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forge-token"},
		Data: map[string][]byte{refluxv1.PullRequestTokenKey: []byte(reader)}}
	g.Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	p := validPolicy(ns, "prs")
	p.Spec.Git.PullRequest = prSpec(refluxv1.GiteaProvider, gt.URL)
	g.Expect(k8sClient.Create(ctx, p)).To(Succeed())

	obj := waitForCondition(g, client.ObjectKeyFromObject(p), meta.StalledCondition, metav1.ConditionTrue, refluxv1.TokenReadOnlyReason)
	g.Expect(conditions.GetReason(obj, meta.ReadyCondition)).To(Equal(refluxv1.TokenReadOnlyReason))
	g.Expect(conditions.GetMessage(obj, meta.ReadyCondition)).To(And(
		ContainSubstring(url), ContainSubstring("may read the repository but not write")))

	// A token that may write: Ready at the next check, no spec change.
	secret.Data[refluxv1.PullRequestTokenKey] = []byte(gt.Token)
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	waitForCondition(g, client.ObjectKeyFromObject(p), meta.ReadyCondition, metav1.ConditionTrue, refluxv1.ValidPolicyReason)
}
