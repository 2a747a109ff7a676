package controllers

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestConditionsPatcherOwnsOnlyItsConditions: reflux's status patch
// writes Drifted and ReverseSynced in one request, keeps what
// kustomize-controller wrote meanwhile, and sends nothing when they are
// unchanged.
func TestConditionsPatcherOwnsOnlyItsConditions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "status-"}}
	g.Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns.Name},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Minute}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "podinfo"}}}
	g.Expect(k8sClient.Create(ctx, ks)).To(Succeed())
	conditions.MarkTrue(ks, meta.ReadyCondition, meta.ReconciliationSucceededReason, "Applied revision: main@sha1:1")
	g.Expect(k8sClient.Status().Update(ctx, ks)).To(Succeed())

	counted := &patchCounter{}
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Wrap(counted.wrap)
	c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	obj := ks.DeepCopy()
	p := newConditionsPatcher(c, obj, kustomizationOwnedConditions...)
	conditions.MarkFalse(obj, refluxv1.DriftedCondition, refluxv1.NoDriftReason, "no drift from revision main@sha1:1")
	// kustomize-controller starts a reconcile meanwhile.
	flux := ks.DeepCopy()
	conditions.MarkUnknown(flux, meta.ReadyCondition, meta.ProgressingReason, "Reconciliation in progress")
	g.Expect(k8sClient.Status().Update(ctx, flux)).To(Succeed())

	g.Expect(p.Patch(ctx, obj)).To(Succeed())
	got := &kustomizev1.Kustomization{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(conditions.Get(got, refluxv1.DriftedCondition).Reason).To(Equal(refluxv1.NoDriftReason))
	g.Expect(conditions.Get(got, meta.ReadyCondition).Reason).To(Equal(meta.ProgressingReason), "Flux's condition is left alone")
	g.Expect(counted.patches()).To(Equal(1), "one status patch, applied to the latest version")

	// Nothing changed: nothing is sent.
	again := got.DeepCopy()
	g.Expect(newConditionsPatcher(c, again, kustomizationOwnedConditions...).Patch(ctx, again)).To(Succeed())
	g.Expect(counted.patches()).To(Equal(1))
}

// patchCounter counts the PATCH requests that succeed.
type patchCounter struct {
	mu sync.Mutex
	n  int
}

func (c *patchCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if req.Method == http.MethodPatch && err == nil && resp.StatusCode < 300 {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
		return resp, err
	})
}

func (c *patchCounter) patches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
