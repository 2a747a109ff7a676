package expiry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/record"
)

// flakyHolder refuses the first fails releases, as an apiserver that
// refuses the patch (RBAC, a webhook, a timeout) would, then releases.
// Each release records the Drift record as it stood when it was asked.
type flakyHolder struct {
	client client.Reader
	key    types.NamespacedName

	mu    sync.Mutex
	fails int
	// seen is the record at each release asked, in order.
	seen []*refluxv1.Drift
}

func (h *flakyHolder) Hold(context.Context, refluxv1.ObjectRef, map[string]string) (*unstructured.Unstructured, error) {
	return nil, nil
}

func (h *flakyHolder) Release(ctx context.Context, _ refluxv1.ObjectRef) error {
	rec := &refluxv1.Drift{}
	if err := h.client.Get(ctx, h.key, rec); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, rec)
	if h.fails > 0 {
		h.fails--
		return errors.New(`configmaps "flags" is forbidden: cannot patch (injected)`)
	}
	return nil
}

func (h *flakyHolder) asked() []*refluxv1.Drift {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*refluxv1.Drift(nil), h.seen...)
}

type oneKustomization struct{ snap reverse.Snapshot }

func (r oneKustomization) Snapshot(types.NamespacedName) (reverse.Snapshot, bool) {
	return r.snap, true
}

type liveExists struct{}

func (liveExists) Get(schema.GroupVersionKind, string, string) (*unstructured.Unstructured, bool) {
	return &unstructured.Unstructured{}, true
}

// TestReleaseThatFailsIsRetried: onExpiry Release with a release the
// apiserver refuses once. The record closes as Expired but keeps saying
// the release is owed (heldSince, ReleasePending) until it happened, so
// the timer's retry releases again, and only then does the record say
// HoldReleased (issue 22 §3: the status was written released before the
// release, and a failed release was never asked again).
func TestReleaseThatFailsIsRetried(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	now := t0.Add(2 * time.Hour)

	scheme := runtime.NewScheme()
	g.Expect(refluxv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(kustomizev1.AddToScheme(scheme)).To(Succeed())
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
	policy := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "hotfixes"}}
	policy.Spec.ManualHotfix.OnExpiry = refluxv1.ExpiryRelease

	sealer, err := record.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	g.Expect(err).NotTo(HaveOccurred())
	rec := &refluxv1.Drift{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "configmap-flags"},
		Spec: refluxv1.DriftSpec{Kustomization: refluxv1.KustomizationRef{Namespace: "apps", Name: "web"}, Policy: policy.Name,
			Object: refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "flags", UID: "u1"}},
		Status: refluxv1.DriftStatus{State: refluxv1.DriftHeld, HeldSince: &metav1.Time{Time: t0},
			HoldExpiresAt: &metav1.Time{Time: t0.Add(time.Hour)}}}
	g.Expect(sealer.Seal(rec)).To(Succeed())
	g.Expect(sealer.SealStatus(rec)).To(Succeed())
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&refluxv1.Drift{}).WithObjects(ks, rec).Build()

	key := client.ObjectKeyFromObject(rec)
	holder := &flakyHolder{client: c, key: key, fails: 1}
	x, err := execute.New(execute.Options{Client: c, APIReader: c, Holder: holder, Sealer: sealer, Log: logr.Discard(),
		Now: func() time.Time { return now }})
	g.Expect(err).NotTo(HaveOccurred())
	timers, err := New(Options{Client: c, Records: x, Live: liveExists{}, Log: logr.Discard(), Now: func() time.Time { return now },
		Registry: oneKustomization{snap: reverse.Snapshot{Gov: &reverse.Governed{Kustomization: ks, Policy: policy}}}})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer close(done)
		timers.Start(ctx)
	}()
	defer func() { cancel(); <-done }()

	cur := &refluxv1.Drift{}
	g.Expect(c.Get(ctx, key, cur)).To(Succeed())
	timers.Schedule([]refluxv1.Drift{*cur})

	g.Eventually(func() int { return len(holder.asked()) }, 10*time.Second, 10*time.Millisecond).Should(Equal(2),
		"the release the apiserver refused is asked again")
	retry := holder.asked()[1]
	g.Expect(retry.Status.State).To(Equal(refluxv1.DriftExpired), "closed before the first release, as before")
	g.Expect(retry.Status.HeldSince).NotTo(BeNil(), "after the failed release the record still says the release is owed")
	g.Expect(apimeta.FindStatusCondition(retry.Status.Conditions, refluxv1.HoldExpiredCondition).Reason).
		To(Equal(refluxv1.HoldReleasePendingReason))

	g.Eventually(func() string {
		g.Expect(c.Get(ctx, key, cur)).To(Succeed())
		if cur.Status.HeldSince != nil {
			return "still owed"
		}
		return apimeta.FindStatusCondition(cur.Status.Conditions, refluxv1.HoldExpiredCondition).Reason
	}, 10*time.Second, 10*time.Millisecond).Should(Equal(refluxv1.HoldReleasedReason))
	g.Expect(sealer.Verify(cur)).To(Succeed(), "every status write is sealed")
	g.Expect(cur.Status.Closed).NotTo(BeNil())
	g.Expect(cur.Status.Closed.Reason).To(Equal(refluxv1.ClosedHoldExpiredReason))
	g.Expect(holder.asked()).To(HaveLen(2), "released once it succeeded: nothing more is asked")

	// The reconcile request follows the record's write: wait for it.
	reconciled := &kustomizev1.Kustomization{}
	g.Eventually(func() map[string]string {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ks), reconciled)).To(Succeed())
		return reconciled.Annotations
	}, 10*time.Second, 10*time.Millisecond).Should(HaveKey("reconcile.fluxcd.io/requestedAt"), "Flux is asked to restore Git once released")
}
