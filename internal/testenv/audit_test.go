package testenv_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
)

func TestAuditWebhookReceivesWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "audit-probe", Namespace: "default"},
		Data:       map[string]string{"k": "v"},
	}
	g.Expect(env.Client.Create(ctx, cm, client.FieldOwner("audit-probe-writer"))).To(Succeed())

	g.Eventually(func() []auditv1.Event {
		return audit.Find(func(e auditv1.Event) bool {
			return e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Name == "audit-probe" &&
				e.Stage == auditv1.StageResponseComplete
		})
	}, 30*time.Second, 200*time.Millisecond).Should(ContainElement(And(
		HaveField("User.Username", "admin"),
		HaveField("Level", auditv1.LevelRequest),
		HaveField("RequestObject", Not(BeNil())),
	)))

	// Reads are not audited: the policy keeps the stream to writes.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Consistently(func() []auditv1.Event {
		return audit.Find(func(e auditv1.Event) bool {
			return e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Name == "audit-probe"
		})
	}, time.Second, 200*time.Millisecond).Should(BeEmpty())
}

// TestFluxWritesAreAttributedToControllerUser proves the whole environment
// end to end (push, GitRepository, Kustomization, forced reconcile) and
// that kustomize-controller's applies reach the audit stream under its own
// user, which drift attribution relies on.
func TestFluxWritesAreAttributedToControllerUser(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "attribution"
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	_, err := env.Git.PushDir(ctx, "attribution.git", writeTree(t, map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: attributed\ndata:\n  k: v\n",
	}))
	g.Expect(err).NotTo(HaveOccurred())

	repo, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "attribution", Namespace: ns, Repo: "attribution.git"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, repo)).To(Succeed())
	ks, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: "attribution", Namespace: ns, Source: repo.Name, Path: "./app", TargetNamespace: ns, Prune: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, ks)).To(Succeed())
	g.Expect(env.Reconcile(ctx, ks)).To(Succeed())

	g.Eventually(func() []auditv1.Event {
		return audit.Find(func(e auditv1.Event) bool {
			return e.ObjectRef != nil && e.ObjectRef.Name == "attributed" && e.ObjectRef.Namespace == ns &&
				e.Stage == auditv1.StageResponseComplete
		})
	}, 30*time.Second, 200*time.Millisecond).Should(ContainElement(And(
		HaveField("User.Username", testenv.KustomizeControllerUser),
		HaveField("Verb", "patch"),
	)))
}

func TestAddedUsersAreAttributed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	alice, err := env.AddUser("alice", "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(alice.KubeconfigPath).To(BeARegularFile())
	c, err := client.New(alice.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "alice-probe", Namespace: "default"}}
	g.Expect(c.Create(ctx, cm)).To(Succeed())

	g.Eventually(func() []auditv1.Event {
		return audit.Find(func(e auditv1.Event) bool {
			return e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Name == "alice-probe"
		})
	}, 30*time.Second, 200*time.Millisecond).Should(ContainElement(HaveField("User.Username", "alice")))
}
