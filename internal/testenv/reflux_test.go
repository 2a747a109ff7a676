package testenv_test

import (
	"context"
	"errors"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestStartReflux runs the real `reflux manager` against the shared
// environment and reads it the way a benchmark does: metrics, memory and
// processor time from /proc, its log, and a clean stop.
func TestStartReflux(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	r, err := testenv.StartReflux(ctx, env, testenv.RefluxOptions{
		Name: "reflux-test",
		Args: []string{"--concurrent=2"},
	})
	if errors.Is(err, testenv.ErrMissingReflux) {
		skipWithoutReflux(t, err)
	}
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(r.Stop()).To(Succeed()) }()
	g.Expect(r.User.Name).To(Equal(testenv.RefluxUser))
	// The identity is the installed ServiceAccount's and nothing more: no
	// system:masters to hide a verb config/rbac forgot.
	cs, err := kubernetes.NewForConfig(r.User.Config)
	g.Expect(err).NotTo(HaveOccurred())
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(Equal(testenv.RefluxUser))
	g.Expect(review.Status.UserInfo.Groups).To(ContainElement("system:serviceaccounts:" + testenv.RefluxNamespace))
	g.Expect(review.Status.UserInfo.Groups).NotTo(ContainElement("system:masters"))
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"}}, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "config/rbac grants no namespace creation: %v", err)

	m, err := r.Metrics(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	requests, ok := m.Sum("rest_client_requests_total")
	g.Expect(ok).To(BeTrue(), "controller-runtime exports client-go's request counter")
	g.Expect(requests).To(BeNumerically(">", 0), "reflux listed and watched to become ready")
	_, ok = m.Sum("no_such_metric_total")
	g.Expect(ok).To(BeFalse())

	rss, err := r.RSS()
	g.Expect(err).NotTo(HaveOccurred())
	peak, err := r.PeakRSS()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rss).To(BeNumerically(">", 1<<20))
	g.Expect(peak).To(BeNumerically(">=", rss))
	cpu, err := r.CPUTime()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cpu).To(BeNumerically(">", 0), "starting a manager takes some processor time")

	g.Expect(r.Stop()).To(Succeed())
	g.Expect(r.Stop()).To(Succeed(), "a second Stop is harmless")
	_, err = r.RSS()
	g.Expect(err).To(HaveOccurred(), "a stopped process has no /proc entry")
	log, err := r.Log()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).To(ContainSubstring("starting manager"))
}

// TestStartRefluxMissingBinary names the make target to run.
func TestStartRefluxMissingBinary(t *testing.T) {
	g := NewWithT(t)
	_, err := testenv.StartReflux(context.Background(), env, testenv.RefluxOptions{Binary: t.TempDir() + "/reflux"})
	g.Expect(err).To(MatchError(testenv.ErrMissingReflux))
	g.Expect(err.Error()).To(ContainSubstring("make build"))
}

// TestStartRefluxPassesArgs shows the caller's flags reach the binary: one
// it does not know makes reflux exit, and StartReflux says so at once
// rather than waiting out the readiness timeout.
func TestStartRefluxPassesArgs(t *testing.T) {
	g := NewWithT(t)
	_, err := testenv.StartReflux(context.Background(), env, testenv.RefluxOptions{
		Name: "reflux-bad-flag",
		Args: []string{"--no-such-flag"},
	})
	if errors.Is(err, testenv.ErrMissingReflux) {
		skipWithoutReflux(t, err)
	}
	g.Expect(err).To(MatchError(ContainSubstring("reflux-bad-flag exited")))
}

// TestInstallRefluxAppliesConfigDefault: the installation is config/default
// as a user applies it, and applying it again changes nothing.
func TestInstallRefluxAppliesConfigDefault(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.InstallReflux(ctx)).To(Succeed())
	g.Expect(env.InstallReflux(ctx)).To(Succeed(), "a second install is a no-op")
	role := &rbacv1.ClusterRole{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "reflux-manager"}, role)).To(Succeed())
	g.Expect(role.Rules).NotTo(BeEmpty())
	binding := &rbacv1.RoleBinding{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.RefluxNamespace, Name: "reflux-leader-election"}, binding)).To(Succeed())
	g.Expect(binding.Subjects).To(ContainElement(HaveField("Name", testenv.RefluxServiceAccount)))
	sa := &corev1.ServiceAccount{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.RefluxNamespace, Name: testenv.RefluxServiceAccount}, sa)).To(Succeed())
}

// skipWithoutReflux skips a bare `go test` run without bin/reflux; make
// test builds it first, so in CI a missing binary is a failure.
func skipWithoutReflux(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%v in CI: make test builds it first", err)
	}
	t.Skipf("%v (make test builds it first)", err)
}
