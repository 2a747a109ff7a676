package fleet

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/auth"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// cfg is the connection it was built with.
	cfg *rest.Config

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

func (e *engine) forgotten() []types.NamespacedName {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]types.NamespacedName(nil), e.forgot...)
}

// fingerprint is the connection e is the engine of.
func (e *engine) fingerprint(f *Fleet[*engine]) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for fp, c := range f.clusters {
		if c.engine == e {
			return fp
		}
	}
	return ""
}

// hold is a release an engine owes: the hold of a Kustomization forgotten
// before its change was evaluated.
var hold = owed.Release{As: "system:serviceaccount:apps:reconciler",
	Object: refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings"},
	Record: types.NamespacedName{Namespace: "apps", Name: "configmap-settings-0123456789"}}

// setup starts a fleet over a real apiserver that serves as both hub
// (the kubeconfig Secret) and spoke (the probe), and returns it with the
// kubeconfig Secret's key and two users' kubeconfigs to rotate between.
func setup(t *testing.T, notify ...func(types.NamespacedName)) (*Fleet[*engine], *testenv.Env, *kustomizev1.Kustomization, [2][]byte) {
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
	ks := secretFor(g, env, "spoke", kubeconfigs[0])

	build := func(ctx context.Context, c Cluster) (*engine, error) {
		return &engine{ctx: ctx, user: string(c.Config.CertData), cfg: c.Config, owed: map[owed.Release]bool{}}, nil
	}
	// The apiserver is the hub that makes workload identity tokens, and
	// the spoke that takes them.
	opts := Options{ProbeInterval: 50 * time.Millisecond, Log: testr.New(t), WorkloadIdentity: WorkloadIdentity{Client: env.Client}}
	for _, n := range notify {
		opts.Notify = n
	}
	f := New[*engine](env.Client, build, opts)
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

	rotate(g, env, "spoke", kubeconfigs[1])

	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	var next *engine
	g.Eventually(func() bool {
		next, _ = f.Of(id)
		return next != old
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the rotated Secret reconnects")
	g.Expect(next.user).NotTo(Equal(old.user), "the new engine connects as the rotated kubeconfig's user")
	g.Expect(next.Owed()).To(ConsistOf(hold), "the old engine's owed release is the new one's")
	g.Eventually(old.stopped, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(old.forgotten()).To(BeEmpty(), "the old engine stops without forgetting: its holds are the new one's")
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
	g.Expect(e.forgotten()).To(ConsistOf(id))
	_, assigned := f.Of(id)
	g.Expect(assigned).To(BeFalse())

	// Several probes go by: each finds a release owed.
	g.Consistently(f.Connections, 500*time.Millisecond, 50*time.Millisecond).Should(Equal(1))
	g.Expect(e.stopped()).To(BeFalse(), "the engine owing a release still runs")
	g.Expect(f.Clusters()).To(BeEmpty(), "no Kustomization names the Secret")

	e.released(hold)
	g.Eventually(f.Connections, 10*time.Second, 50*time.Millisecond).Should(BeZero())
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

// secretFor makes Secret name in the hub's namespace hold kubeconfig,
// and a Kustomization named after it that targets the cluster through it.
func secretFor(g Gomega, env *testenv.Env, name string, kubeconfig []byte) *kustomizev1.Kustomization {
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: name},
		Data: map[string][]byte{"value": kubeconfig}})).To(Succeed())
	return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: name},
		Spec: kustomizev1.KustomizationSpec{KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: name}}}}
}

// rotate gives Secret name another kubeconfig.
func rotate(g Gomega, env *testenv.Env, name string, kubeconfig []byte) {
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: "hub", Name: name}, secret)).To(Succeed())
	secret.Data["value"] = kubeconfig
	g.Expect(env.Client.Update(context.Background(), secret)).To(Succeed())
}

// TestOneKubeconfigOneEngine (issue 24 §2): Secrets holding the same
// kubeconfig (a copy per tenant namespace, as Flux needs) share one
// engine, so one set of watches; another identity's kubeconfig for the
// same cluster gets its own, since watches run as the identity.
func TestOneKubeconfigOneEngine(t *testing.T) {
	g := NewWithT(t)
	f, env, ks, kubeconfigs := setup(t)
	ctx := context.Background()
	copied := secretFor(g, env, "spoke-copy", kubeconfigs[0])
	other := secretFor(g, env, "spoke-other-user", kubeconfigs[1])

	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := f.For(ctx, copied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Engine).To(BeIdenticalTo(a.Engine), "the same kubeconfig in another Secret")
	g.Expect(b.Ref.Secret).To(Equal("spoke-copy"), "records name the Secret their Kustomization names")
	c, err := f.For(ctx, other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Engine).NotTo(BeIdenticalTo(a.Engine), "another identity")
	g.Expect(f.Connections()).To(Equal(2))
	g.Expect(f.Clusters()).To(HaveLen(3))
	g.Expect(f.serves(a.Engine.fingerprint(f), Ref{Namespace: "hub", Secret: "spoke-copy"})).To(BeTrue())
	g.Expect(f.serves(a.Engine.fingerprint(f), Ref{Namespace: "hub", Secret: "spoke-other-user"})).To(BeFalse())

	// The first Kustomization going leaves the connection to the copy's.
	f.Forget(ctx, types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name})
	g.Expect(a.Engine.stopped()).To(BeFalse())
	g.Expect(f.Connections()).To(Equal(2))
}

// TestRotatingOneSharerMovesOnlyIt (issue 24 §2): of two Secrets sharing
// a connection, the one rotated moves to the connection of its new
// kubeconfig, and the engine it left forgets its Kustomization; the other
// stays. When the last one moves too, the old engine stops and its owed
// releases go with them.
func TestRotatingOneSharerMovesOnlyIt(t *testing.T) {
	g := NewWithT(t)
	f, env, ks, kubeconfigs := setup(t)
	ctx := context.Background()
	copied := secretFor(g, env, "spoke-copy", kubeconfigs[0])
	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.For(ctx, copied)
	g.Expect(err).NotTo(HaveOccurred())
	old := a.Engine
	old.Owe(hold)
	first := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	second := types.NamespacedName{Namespace: copied.Namespace, Name: copied.Name}

	rotate(g, env, "spoke-copy", kubeconfigs[1])
	var moved *engine
	g.Eventually(func() bool {
		moved, _ = f.Of(second)
		return moved != old
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the rotated Secret's Kustomization moves")
	stayed, _ := f.Of(first)
	g.Expect(stayed).To(BeIdenticalTo(old), "the other Secret's stays")
	g.Expect(old.forgotten()).To(ConsistOf(second), "the engine it left forgets it")
	g.Expect(old.stopped()).To(BeFalse())
	g.Expect(moved.Owed()).To(BeEmpty(), "the old engine still runs, and releases what it owes")
	g.Expect(f.Connections()).To(Equal(2))

	rotate(g, env, "spoke", kubeconfigs[1])
	g.Eventually(func() *engine {
		e, _ := f.Of(first)
		return e
	}, 30*time.Second, 50*time.Millisecond).Should(BeIdenticalTo(moved), "onto the connection already there")
	g.Eventually(old.stopped, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(old.forgotten()).To(ConsistOf(second), "the last to move is not forgotten: its holds carry on")
	g.Expect(moved.Owed()).To(ConsistOf(hold))
	g.Expect(f.Connections()).To(Equal(1))
}

// TestSwitchingToACopyKeepsTheEngine: a Kustomization that names another
// Secret holding the same kubeconfig stays with its engine, which neither
// forgets it nor disconnects.
func TestSwitchingToACopyKeepsTheEngine(t *testing.T) {
	g := NewWithT(t)
	f, env, ks, kubeconfigs := setup(t)
	ctx := context.Background()
	secretFor(g, env, "spoke-copy", kubeconfigs[0])
	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	moved := ks.DeepCopy()
	moved.Spec.KubeConfig.SecretRef.Name = "spoke-copy"
	b, err := f.For(ctx, moved)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Engine).To(BeIdenticalTo(a.Engine))
	g.Expect(b.Ref.Secret).To(Equal("spoke-copy"))
	g.Expect(a.Engine.forgotten()).To(BeEmpty(), "nothing to forget: the same engine governs it")
	g.Expect(a.Engine.stopped()).To(BeFalse())
	g.Expect(f.Clusters()).To(ConsistOf(Ref{Namespace: "hub", Secret: "spoke-copy"}), "the first Secret is no longer in use")
	g.Expect(f.Connections()).To(Equal(1))
}

// TestUnreadableSecretMarksOnlyItsKustomizations (issue 24 §2): of two
// tenants' copies of one kubeconfig, sharing one connection, the one
// whose Secret can no longer be read is reported, and only its
// Kustomization is told; the other's, and the connection, go on. When the
// Secret is back, it is told again.
func TestUnreadableSecretMarksOnlyItsKustomizations(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	told := map[types.NamespacedName]int{}
	f, env, ks, kubeconfigs := setup(t, func(id types.NamespacedName) {
		mu.Lock()
		defer mu.Unlock()
		told[id]++
	})
	toldOf := func(id types.NamespacedName) func() int {
		return func() int {
			mu.Lock()
			defer mu.Unlock()
			return told[id]
		}
	}
	ctx := context.Background()
	copied := secretFor(g, env, "spoke-copy", kubeconfigs[0])
	first := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	second := types.NamespacedName{Namespace: copied.Namespace, Name: copied.Name}
	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.For(ctx, copied)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: "spoke-copy"}})).To(Succeed())
	g.Eventually(toldOf(second), 30*time.Second, 50*time.Millisecond).Should(Equal(1))
	b, err := f.For(ctx, copied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Engine).To(BeIdenticalTo(a.Engine), "governed on with what was read before")
	g.Expect(b.Unreachable).NotTo(BeNil())
	g.Expect(b.Unreachable.Unread).To(BeTrue())
	g.Expect(b.Unreachable.Error()).To(ContainSubstring("the kubeconfig Secret/spoke-copy cannot be read"))
	g.Expect(apierrors.IsNotFound(b.Unreachable.Err)).To(BeTrue(), "the cause: %v", b.Unreachable.Err)
	a, err = f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Unreachable).To(BeNil(), "the other tenant's Secret is sound")
	g.Consistently(toldOf(first), 500*time.Millisecond, 50*time.Millisecond).Should(BeZero())
	g.Expect(toldOf(second)()).To(Equal(1), "told once, not at every probe")

	secretFor(g, env, "spoke-copy", kubeconfigs[0])
	g.Eventually(toldOf(second), 30*time.Second, 50*time.Millisecond).Should(Equal(2))
	b, err = f.For(ctx, copied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Unreachable).To(BeNil())
	g.Expect(toldOf(first)()).To(BeZero())
	g.Expect(f.Connections()).To(Equal(1))
}

// TestWorkloadIdentityConnectsAsItsServiceAccount (issue 24 §2): a
// Kustomization naming a workload identity ConfigMap (provider generic,
// the ServiceAccount the ConfigMap names, with Flux's object-level
// workload identity) is connected as kustomize-controller connects: with
// a token fluxcd/pkg/auth has the hub make for that ServiceAccount. The
// apiserver is both hub and spoke here, so its own ServiceAccount tokens
// are the spoke's credentials. A changed ConfigMap reconnects as a
// rotated Secret does; without the feature gate the connection is
// refused with Flux's reason.
func TestWorkloadIdentityConnectsAsItsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	// Registered before setup's, so that it runs after the fleet and its
	// probes have stopped: they read the gate (a race the detector found).
	t.Cleanup(auth.DisableObjectLevelWorkloadIdentity)
	f, env, _, _ := setup(t)
	ctx := context.Background()
	for _, sa := range []string{"spoke-wi", "spoke-wi-2"} {
		g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: sa}})).To(Succeed())
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: "spoke-identity"},
		Data: map[string]string{meta.KubeConfigKeyProvider: "generic", meta.KubeConfigKeyAddress: env.Config.Host,
			meta.KubeConfigKeyCACert: string(env.Config.CAData), meta.KubeConfigKeyServiceAccountName: "spoke-wi"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: "wi"},
		Spec: kustomizev1.KustomizationSpec{KubeConfig: &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: cm.Name}}}}

	_, err := f.For(ctx, ks)
	g.Expect(err).To(MatchError(ContainSubstring(auth.FeatureGateObjectLevelWorkloadIdentity+" feature gate is not enabled")),
		"as kustomize-controller refuses it without the gate")

	auth.EnableObjectLevelWorkloadIdentity()
	a, err := f.For(ctx, ks)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Ref.String()).To(Equal("ConfigMap/spoke-identity"))
	g.Expect(a.Unreachable).To(BeNil())
	whoami := func(e *engine) (string, error) {
		cs, err := kubernetes.NewForConfig(e.cfg)
		if err != nil {
			return "", err
		}
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return r.Status.UserInfo.Username, nil
	}
	g.Expect(whoami(a.Engine)).To(Equal("system:serviceaccount:hub:spoke-wi"))

	// Another ServiceAccount named: a new connection, as that identity.
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data[meta.KubeConfigKeyServiceAccountName] = "spoke-wi-2"
	g.Expect(env.Client.Patch(ctx, cm, patch)).To(Succeed())
	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	var moved *engine
	g.Eventually(func() bool {
		moved, _ = f.Of(id)
		return moved != a.Engine
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(whoami(moved)).To(Equal("system:serviceaccount:hub:spoke-wi-2"))
	g.Eventually(a.Engine.stopped, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(f.Connections()).To(Equal(1))
}
