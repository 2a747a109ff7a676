package controllers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/expiry"
	"github.com/reflux-dev/reflux/reverse/owed"
	"github.com/reflux-dev/reflux/reverse/record"
)

// TestCloseWhoseReleaseFailsIsRetried (issue 22 §3): a record is
// dismissed, or resolved, while the apiserver refuses its release, as
// RBAC refuses an identity that may not patch the object. The record
// closes but keeps status.heldSince, so the release is still owed; the
// expiry timers ask for it again, refused again and again, the record
// still saying it is owed; once the identity may patch, they release the
// object, clear heldSince and, for a dismissal, ask Flux to restore Git.
// Before, the close cleared heldSince first, and the failed release was
// never asked again.
func TestCloseWhoseReleaseFailsIsRetried(t *testing.T) {
	tests := []struct {
		name    string
		dismiss bool
		// input decides for the record cur of the held object.
		input func(name string, cur *refluxv1.Drift) decide.Input
		state refluxv1.DriftState
	}{
		{name: "dismissed", dismiss: true, state: refluxv1.DriftDismissed,
			input: func(name string, cur *refluxv1.Drift) decide.Input {
				return decide.Input{Name: name, Record: cur, Now: time.Now(), Live: decide.Live{Exists: true, Held: true, HeldBy: name}}
			}},
		{name: "resolved: the applied revision declares the live value", state: refluxv1.DriftResolved,
			input: func(name string, cur *refluxv1.Drift) decide.Input {
				return decide.Input{Name: name, Record: cur, Now: time.Now(), Live: decide.Live{Exists: true, Held: true, HeldBy: name},
					Evaluated: true, Declared: true, Revision: "main@sha1:0123456789abcdef0123456789abcdef01234567"}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testCloseWhoseReleaseFails(t, tt.dismiss, tt.state, tt.input)
		})
	}
}

func testCloseWhoseReleaseFails(t *testing.T, dismiss bool, state refluxv1.DriftState,
	input func(name string, cur *refluxv1.Drift) decide.Input) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t)
	cm := applyAsFlux(t, ns, "flags")
	ks := kustomization(ns, "web", "repo", nil, false)
	g.Expect(k8sClient.Create(ctx, ks)).To(Succeed())

	// The identity releases go out as: it may read ConfigMaps, not patch
	// them, until the binding below is made.
	user := "tenant-" + ns
	u, err := testEnv.ControlPlane.AddUser(envtest.User{Name: user}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := client.New(u.Config(), client.Options{Scheme: k8sClient.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	sealer, err := record.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	g.Expect(err).NotTo(HaveOccurred())
	name := "configmap-flags"
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	_, err = Holder{Client: k8sClient}.Hold(ctx, refOf(cm), refluxv1.HoldAnnotations(name, since.Time, false))
	g.Expect(err).NotTo(HaveOccurred())
	rec := heldRecord(t, sealer, ns, name, refOf(cm), since, dismiss)

	holder := &refusals{Holder: Holder{Client: tenant}}
	x, err := execute.New(execute.Options{Client: k8sClient, APIReader: k8sClient, Holder: holder,
		Sealer: sealer, Log: logr.Discard()})
	g.Expect(err).NotTo(HaveOccurred())
	p := &execute.Plan{Name: name, Namespace: ns, Object: refOf(cm), Kustomization: ks}
	err = x.WithRecord(ctx, p, func(cur *refluxv1.Drift) (decide.Decision, error) {
		return decide.Decide(input(name, cur)), nil
	})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the release is refused: %v", err)

	got := &refluxv1.Drift{}
	owes := func() *metav1.Time {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(rec), got)).To(Succeed())
		return got.Status.HeldSince
	}
	g.Expect(owes()).NotTo(BeNil(), "the record says the release is still owed")
	g.Expect(got.Status.State).To(Equal(state), "closed first, as before")
	g.Expect(isHeld(ctx, cm)).To(BeTrue())

	// The expiry timers take the owed release, refused until the identity
	// may patch.
	timers, err := expiry.New(expiry.Options{Client: k8sClient, Records: x, Live: apiserverLive{}, Log: logr.Discard(),
		Registry: oneGoverned{reverse.Snapshot{Gov: &reverse.Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}}}}})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer close(done)
		timers.Start(ctx)
	}()
	defer func() { cancel(); <-done }()
	timers.Schedule([]refluxv1.Drift{*got})

	g.Eventually(holder.refused.Load, 10*time.Second, 10*time.Millisecond).Should(BeNumerically(">=", 4),
		"the refused release is asked again, with backoff")
	g.Expect(owes()).NotTo(BeNil(), "each refusal leaves the release owed")
	g.Expect(isHeld(ctx, cm)).To(BeTrue())

	grantPatch(t, ns, user)
	g.Eventually(func() bool { return isHeld(ctx, cm) }, 30*time.Second, 50*time.Millisecond).Should(BeFalse(),
		"the owed release is retried until it happens")
	g.Eventually(owes, 10*time.Second, 50*time.Millisecond).Should(BeNil(), "and the record says it happened")
	g.Expect(got.Status.State).To(Equal(state))
	g.Expect(sealer.Verify(got)).To(Succeed(), "every status write is sealed")
	reconcileAsked := func() map[string]string {
		cur := &kustomizev1.Kustomization{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ks), cur)).To(Succeed())
		return cur.Annotations
	}
	if !dismiss {
		// Written with the release, before heldSince went: a resolved
		// record's value is Git's, nothing for Flux to restore.
		g.Expect(reconcileAsked()).NotTo(HaveKey(meta.ReconcileRequestAnnotation), "a resolved record's value is Git's")
		return
	}
	g.Eventually(reconcileAsked, 10*time.Second, 50*time.Millisecond).Should(HaveKey(meta.ReconcileRequestAnnotation),
		"Flux is asked to restore Git")
}

// refusals is the real Holder, counting the releases the apiserver
// refused.
type refusals struct {
	Holder
	refused atomic.Int32
}

func (r *refusals) Release(ctx context.Context, obj refluxv1.ObjectRef) error {
	err := r.Holder.Release(ctx, obj)
	if apierrors.IsForbidden(err) {
		r.refused.Add(1)
	}
	return err
}

// heldRecord creates a sealed record of obj, held since since and, when
// dismiss, asked to be dismissed.
func heldRecord(t *testing.T, sealer *record.Sealer, ns, name string, obj refluxv1.ObjectRef, since metav1.Time, dismiss bool) *refluxv1.Drift {
	t.Helper()
	ctx := context.Background()
	rec := &refluxv1.Drift{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: refluxv1.DriftSpec{Kustomization: refluxv1.KustomizationRef{Namespace: ns, Name: "web"}, Object: obj, FirstSeen: since, LastSeen: since}}
	if dismiss {
		rec.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
	}
	if err := sealer.Seal(rec); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.Status = refluxv1.DriftStatus{State: refluxv1.DriftHeld, HeldSince: &since}
	if err := sealer.SealStatus(rec); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Status().Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func isHeld(ctx context.Context, cm *corev1.ConfigMap) bool {
	cur := &corev1.ConfigMap{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cur); err != nil {
		return true
	}
	_, held := cur.Annotations[refluxv1.HeldByAnnotation]
	return held
}

// grantPatch lets user patch ConfigMaps in ns.
func grantPatch(t *testing.T, ns, user string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "release"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// oneGoverned governs every Kustomization with one snapshot.
type oneGoverned struct{ snap reverse.Snapshot }

func (o oneGoverned) Snapshot(types.NamespacedName) (reverse.Snapshot, bool) { return o.snap, true }

// apiserverLive reads live objects from the apiserver itself, where the
// engine reads its watches' cache.
type apiserverLive struct{}

func (apiserverLive) Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return nil, false
	}
	return u, true
}

// TestOwedReleaseOfAHoldNoRecordOwnsIsRetried (issue 22 §3): reflux stops
// governing a Kustomization while a change of it is parked and held, and
// the release, made as the Kustomization's identity, is refused. Forget
// hands the hold to owed.Releases, which retries it until the identity
// may patch; it used to log the refusal and leave the hold for good.
func TestOwedReleaseOfAHoldNoRecordOwnsIsRetried(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t)
	cm := applyAsFlux(t, ns, "flags")
	name := "configmap-flags"
	_, err := Holder{Client: k8sClient}.Hold(ctx, refOf(cm), refluxv1.HoldAnnotations(name, time.Now(), false))
	g.Expect(err).NotTo(HaveOccurred())

	// The Kustomization's identity, impersonated as kustomize-controller
	// does: it may not patch ConfigMaps until the binding below is made.
	user := "system:serviceaccount:" + ns + ":tenant"
	x, err := execute.New(execute.Options{Client: k8sClient, APIReader: k8sClient, Holder: Holder{Client: k8sClient},
		Sealer: mustSealer(t), Impersonation: impersonating{}, Log: logr.Discard()})
	g.Expect(err).NotTo(HaveOccurred())
	logged := &errorLog{}
	releases, err := owed.New(owed.Options{Records: k8sClient, Holders: x, Log: funcr.New(logged.add, funcr.Options{})})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer close(done)
		releases.Start(ctx)
	}()
	defer func() { cancel(); <-done }()

	releases.Add(owed.Release{As: user, Object: refOf(cm), Record: types.NamespacedName{Namespace: ns, Name: name}})
	g.Eventually(logged.lines, 10*time.Second, 20*time.Millisecond).Should(ContainElement(And(
		ContainSubstring("forbidden"), ContainSubstring("kubectl -n "+ns+" annotate configmap/flags"))),
		"the refusal is logged with the command that lifts the hold by hand")
	g.Expect(isHeld(ctx, cm)).To(BeTrue())
	g.Expect(releases.Owing()).To(Equal(1), "owed while it waits out its backoff, which the queue does not count")

	grantPatch(t, ns, user)
	g.Eventually(func() bool { return isHeld(ctx, cm) }, 30*time.Second, 50*time.Millisecond).Should(BeFalse(),
		"retried until released")
	g.Eventually(releases.Owing).Should(BeZero(), "nothing owed once released")
}

// impersonating gives Holders that act as a user through the apiserver's
// impersonation, as the manager's tenancy clients do.
type impersonating struct{}

func (impersonating) Holder(user string) (execute.Holder, error) {
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		return nil, err
	}
	return Holder{Client: c}, nil
}

func mustSealer(t *testing.T) *record.Sealer {
	t.Helper()
	s, err := record.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// errorLog keeps what a logger wrote, for a test to wait on.
type errorLog struct {
	mu  sync.Mutex
	out []string
}

func (l *errorLog) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out = append(l.out, prefix+" "+args)
}

func (l *errorLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.out...)
}
