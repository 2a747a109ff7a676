package fleet

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/owed"
)

// engine is a cluster's engine as the fleet sees it: what it was told to
// forget and the releases it owes. The fleet's own decisions (keep,
// replace, disconnect) are what these tests check; the releases
// themselves are reverse/owed's and e2e/fleet's.
type engine struct {
	ctx context.Context
	// user is the kubeconfig's client certificate: which Secret value
	// the engine was built from.
	user string

	mu     sync.Mutex
	owed   map[owed.Release]bool
	forgot []types.NamespacedName
}

func (e *engine) Forget(_ context.Context, id types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forgot = append(e.forgot, id)
}

func (e *engine) Owing() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.owed)
}

func (e *engine) Owed() []owed.Release {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []owed.Release
	for r := range e.owed {
		out = append(out, r)
	}
	return out
}

func (e *engine) Owe(rs ...owed.Release) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range rs {
		e.owed[r] = true
	}
}

// released is the owed release r done.
func (e *engine) released(r owed.Release) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.owed, r)
}

func (e *engine) stopped() bool { return e.ctx.Err() != nil }

// hold is a release an engine owes: the hold of a Kustomization forgotten
// before its change was evaluated.
var hold = owed.Release{As: "system:serviceaccount:apps:reconciler",
	Object: refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings"},
	Record: types.NamespacedName{Namespace: "apps", Name: "configmap-settings-0123456789"}}

// setup starts a fleet over a real apiserver that serves as both hub
// (the kubeconfig Secret) and spoke (the probe), and returns it with the
// kubeconfig Secret's key and two users' kubeconfigs to rotate between.
func setup(t *testing.T) (*Fleet[*engine], *testenv.Env, *kustomizev1.Kustomization, [2][]byte) {
	t.Helper()
	g := NewWithT(t)
	env := testenv.New(t, testenv.WithoutFlux())
	var kubeconfigs [2][]byte
	for i, name := range []string{"reflux-spoke-a", "reflux-spoke-b"} {
		u, err := env.AddUser(name)
		g.Expect(err).NotTo(HaveOccurred())
		kubeconfigs[i], err = os.ReadFile(u.KubeconfigPath)
		g.Expect(err).NotTo(HaveOccurred())
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hub"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: "spoke"},
		Data: map[string][]byte{"value": kubeconfigs[0]}})).To(Succeed())
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: "apps"},
		Spec: kustomizev1.KustomizationSpec{KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "spoke"}}}}

	build := func(ctx context.Context, c Cluster) (*engine, error) {
		return &engine{ctx: ctx, user: string(c.Config.CertData), owed: map[owed.Release]bool{}}, nil
	}
	f := New[*engine](env.Client, build, Options{ProbeInterval: 50 * time.Millisecond, Log: testr.New(t)})
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Start(fctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return f, env, ks, kubeconfigs
}

// TestRotationHandsOwedReleasesOver (issue 24 §2): a rotated kubeconfig
// replaces the cluster's engine, and the releases the old one still owed
// go to the new one rather than stopping with it.
func TestRotationHandsOwedReleasesOver(t *testing.T) {
	g := NewWithT(t)
	f, env, ks, kubeconfigs := setup(t)
	ctx := context.Background()
	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	old := a.Engine
	old.Owe(hold)

	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "hub", Name: "spoke"}, secret)).To(Succeed())
	secret.Data["value"] = kubeconfigs[1]
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())

	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	var next *engine
	g.Eventually(func() bool {
		next, _ = f.Of(id)
		return next != old
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the rotated Secret reconnects")
	g.Expect(next.user).NotTo(Equal(old.user), "the new engine connects as the rotated kubeconfig's user")
	g.Expect(next.Owed()).To(ConsistOf(hold), "the old engine's owed release is the new one's")
	g.Eventually(old.stopped, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(old.forgot).To(BeEmpty(), "the old engine stops without forgetting: its holds are the new one's")
}

// TestIdleClusterKeptUntilItsReleasesAreDone (issue 24 §2): the last
// Kustomization of a cluster going leaves its engine connected while it
// owes a release, and disconnected once it owes none.
func TestIdleClusterKeptUntilItsReleasesAreDone(t *testing.T) {
	g := NewWithT(t)
	f, _, ks, _ := setup(t)
	ctx := context.Background()
	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	e := a.Engine
	e.Owe(hold)
	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	f.Forget(ctx, id)
	g.Expect(e.forgot).To(ConsistOf(id))
	_, assigned := f.Of(id)
	g.Expect(assigned).To(BeFalse())

	// Several probes go by: each finds a release owed.
	g.Consistently(func() []Ref { return f.Clusters() }, 500*time.Millisecond, 50*time.Millisecond).Should(HaveLen(1))
	g.Expect(e.stopped()).To(BeFalse(), "the engine owing a release still runs")

	e.released(hold)
	g.Eventually(func() []Ref { return f.Clusters() }, 10*time.Second, 50*time.Millisecond).Should(BeEmpty())
	g.Eventually(e.stopped, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
}

// TestClusterKeptWhileTargeted: a cluster one Kustomization still
// targets stays connected when another lets go of it.
func TestClusterKeptWhileTargeted(t *testing.T) {
	g := NewWithT(t)
	f, _, ks, _ := setup(t)
	ctx := context.Background()
	other := ks.DeepCopy()
	other.Name = "infra"
	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := f.For(ctx, other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Engine).To(BeIdenticalTo(a.Engine), "one engine per cluster")
	f.Forget(ctx, types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name})
	g.Consistently(func() []Ref { return f.Clusters() }, 300*time.Millisecond, 50*time.Millisecond).Should(HaveLen(1))
	g.Expect(a.Engine.stopped()).To(BeFalse())
	f.Forget(ctx, types.NamespacedName{Namespace: other.Namespace, Name: other.Name})
	g.Eventually(func() []Ref { return f.Clusters() }, 10*time.Second, 50*time.Millisecond).Should(BeEmpty())
	g.Expect(a.Engine.stopped()).To(BeTrue())
}
