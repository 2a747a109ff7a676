package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// applyAsFlux creates a ConfigMap the way kustomize-controller does.
func applyAsFlux(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{
			"name": name, "namespace": ns,
			"annotations": map[string]interface{}{"team": "payments"},
		},
		"data": map[string]interface{}{"MODE": "safe"},
	}}
	if err := k8sClient.Patch(context.Background(), u, client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

func refOf(cm *corev1.ConfigMap) refluxv1.ObjectRef {
	return refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: string(cm.UID)}
}

func TestHoldAndRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cm := applyAsFlux(t, ns, "flags")
	h := Holder{Client: k8sClient}

	since := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	held, err := h.Hold(ctx, refOf(cm), refluxv1.HoldAnnotations("configmap-flags-abc", since, false))
	g.Expect(err).NotTo(HaveOccurred())
	got := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
	g.Expect(held.GetResourceVersion()).To(Equal(got.ResourceVersion), "the object as the hold left it")
	g.Expect(held.GetAnnotations()).To(Equal(got.Annotations))
	g.Expect(held.GetManagedFields()).To(HaveLen(len(got.ManagedFields)), "with who owns what")
	g.Expect(got.Annotations).To(HaveKeyWithValue(refluxv1.ReconcileAnnotation, refluxv1.ReconcileDisabled))
	g.Expect(got.Annotations).To(HaveKeyWithValue(refluxv1.HeldByAnnotation, "configmap-flags-abc"))
	g.Expect(got.Annotations).To(HaveKeyWithValue(refluxv1.HeldSinceAnnotation, "2026-11-29T02:00:00Z"))
	g.Expect(got.Annotations).To(HaveKeyWithValue("team", "payments"))
	g.Expect(got.Data).To(Equal(map[string]string{"MODE": "safe"}), "a hold touches only annotations")
	managers := map[string]bool{}
	for _, mf := range got.ManagedFields {
		managers[mf.Manager] = true
	}
	g.Expect(managers).To(HaveKey(refluxv1.FieldManager), "the hold is written under reflux's own field manager")

	// Holding again is idempotent.
	_, err = h.Hold(ctx, refOf(cm), refluxv1.HoldAnnotations("configmap-flags-abc", since, false))
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(h.Release(ctx, refOf(cm))).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
	g.Expect(got.Annotations).ToNot(HaveKey(refluxv1.ReconcileAnnotation))
	g.Expect(got.Annotations).ToNot(HaveKey(refluxv1.HeldByAnnotation))
	g.Expect(got.Annotations).ToNot(HaveKey(refluxv1.HeldSinceAnnotation))
	g.Expect(got.Annotations).To(HaveKeyWithValue("team", "payments"), "release removes only what reflux added")
	g.Expect(got.Data).To(Equal(map[string]string{"MODE": "safe"}))
}

func TestReleaseNeverRecreates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cm := applyAsFlux(t, ns, "gone")
	h := Holder{Client: k8sClient}
	_, err := h.Hold(ctx, refOf(cm), refluxv1.HoldAnnotations("r", time.Now(), false))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8sClient.Delete(ctx, cm)).To(Succeed())

	g.Expect(h.Release(ctx, refOf(cm))).To(Succeed())
	err = k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "release must not recreate a deleted object, got %v", err)
}

func TestHoldRefusesARecreatedObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	old := applyAsFlux(t, ns, "recreated")
	g.Expect(k8sClient.Delete(ctx, old)).To(Succeed())
	fresh := applyAsFlux(t, ns, "recreated")
	g.Expect(fresh.UID).ToNot(Equal(old.UID))

	h := Holder{Client: k8sClient}
	_, err := h.Hold(ctx, refOf(old), refluxv1.HoldAnnotations("r", time.Now(), false))
	g.Expect(err).To(HaveOccurred(), "a hold seen on the old object must not land on the new one")
	got := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(fresh), got)).To(Succeed())
	g.Expect(got.Annotations).ToNot(HaveKey(refluxv1.ReconcileAnnotation))

	// Releasing the old object's hold is a no-op for the new one.
	g.Expect(h.Release(ctx, refOf(old))).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(fresh), got)).To(Succeed())
	g.Expect(got.UID).To(Equal(fresh.UID))
}
