package drift

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestServerDefaultsAreNotDrift: the Service got a clusterIP and defaults
// from the apiserver when Flux created it; reflux reports none of it.
func TestServerDefaultsAreNotDrift(t *testing.T) {
	g := NewWithT(t)
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: shop.Name, Name: "web"}, svc)).To(Succeed())
	g.Expect(svc.Spec.ClusterIP).ToNot(BeEmpty())
	// A later change to the Service that reflux does record proves the
	// Service was evaluated, and that only that change was found.
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations["reflux.dev/e2e-marker"] = "evaluated"
	editAsAlice(g, svc, "kubectl-annotate")
	rec := shop.WaitRecord(g, "Service", "web", fixture.HasField("/metadata/annotations/reflux.dev~1e2e-marker"))
	g.Expect(rec.Spec.Fields).To(HaveLen(1), "clusterIP, ipFamilies and other defaults are not drift: %+v", rec.Spec.Fields)
}

// TestChangesFluxKeepsAreReportedAsSuch: a key added by a non-kubectl
// manager survives Flux (docs/flux-behaviour.md); reflux reports it,
// marked as not reverted, and does not hold the object for it.
func TestChangesFluxKeepsAreReportedAsSuch(t *testing.T) {
	g := NewWithT(t)
	cm := shop.ConfigMap(g, "legacy-state")
	cm.Data["LAST_RUN"] = "2026-11-29T02:00:00Z"
	editAsAlice(g, cm, "legacy-billing-job")
	rec := shop.WaitRecord(g, "ConfigMap", "legacy-state", fixture.All(fixture.Reported, fixture.HasField("/data/LAST_RUN")))
	f, _ := fixture.Field(rec, "/data/LAST_RUN")
	g.Expect(f.FluxReverts).To(BeFalse())
	g.Expect(f.Modifier.Manager).To(Equal("legacy-billing-job"))
	g.Expect(rec.Status.State).To(Equal(refluxv1.DriftDetected), "nothing to hold against")
	g.Expect(fixture.Held(shop.ConfigMap(g, "legacy-state"))).To(BeFalse())
	shop.Reconcile(g, "shop")
	g.Expect(shop.ConfigMap(g, "legacy-state").Data).To(HaveKey("LAST_RUN"), "Flux keeps it, as reported")
}

// TestDeletingARecordDismissesTheDrift: deleting the record is a
// dismissal too. Its finalizer keeps it until the hold is released and
// Flux has restored Git's value, so the drift is not recorded again.
func TestDeletingARecordDismissesTheDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cm := shop.ConfigMap(g, "tax-rates")
	cm.Data["VAT"] = "21"
	editAsAlice(g, cm, "kubectl-edit")
	rec := shop.WaitRecord(g, "ConfigMap", "tax-rates", fixture.InState(refluxv1.DriftHeld))
	g.Expect(rec.Finalizers).To(ContainElement(refluxv1.DriftFinalizer))
	g.Expect(env.Client.Delete(ctx, rec)).To(Succeed())

	g.Eventually(func() string { return shop.ConfigMap(g, "tax-rates").Data["VAT"] }, timeout, interval).Should(Equal("20"))
	g.Expect(fixture.Held(shop.ConfigMap(g, "tax-rates"))).To(BeFalse())
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), &refluxv1.Drift{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the record goes once Flux restored Git")
	g.Consistently(func() []refluxv1.Drift { return shop.Records(g, "ConfigMap", "tax-rates") }, "2s", interval).Should(BeEmpty())
}

// TestPolicyStatusSummarisesOpenDrift: the policy's status is a bounded
// dashboard of its records, with held objects and when they were held.
func TestPolicyStatusSummarisesOpenDrift(t *testing.T) {
	g := NewWithT(t)
	p := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: shop.Name, Name: "apps"}, p); err != nil {
			return err
		}
		if p.Status.Drift == nil || p.Status.DriftedObjects < 3 {
			return fmt.Errorf("drift report %+v", p.Status.Drift)
		}
		return nil
	}, timeout, interval).Should(Succeed())
	g.Expect(p.Status.Drift.Entries).To(HaveLen(int(p.Status.DriftedObjects)), "under the bound, nothing overflows")
	g.Expect(p.Status.Drift.Overflow).To(BeZero())
	g.Expect(p.Status.Drift.BySeverity).To(HaveKey(refluxv1.SeverityCritical))
	// Most severe first.
	g.Expect(p.Status.Drift.Entries[0].Severity).To(Equal(refluxv1.SeverityCritical))
	held := 0
	for _, e := range p.Status.Drift.Entries {
		if e.State == refluxv1.DriftHeld {
			g.Expect(e.HeldSince).ToNot(BeNil(), e.Object)
			held++
		}
	}
	g.Expect(held).To(BeNumerically(">", 0))
}

// TestKubectlScaleIsDrift: `kubectl scale` writes through the scale
// subresource as manager kubectl; Flux reverts it, so reflux records it.
func TestKubectlScaleIsDrift(t *testing.T) {
	g := NewWithT(t)
	d := deployment(g, "image-worker")
	scale := &autoscalingScale{}
	scale.Spec.Replicas = 3
	g.Expect(alice.Client.SubResource("scale").Update(context.Background(), d, client.WithSubResourceBody(scale.object(d)),
		client.FieldOwner("kubectl"))).To(Succeed())
	rec := shop.WaitRecord(g, "Deployment", "image-worker", fixture.HasField("/spec/replicas"))
	f, _ := fixture.Field(rec, "/spec/replicas")
	g.Expect(f.LiveValue).To(Equal("3"))
	g.Expect(f.FluxReverts).To(BeTrue())
}

// TestNotReadyKustomizationGetsAClearConditionAndNoDrift: a governed
// Kustomization Flux cannot apply is reported as such, never compared.
func TestNotReadyKustomizationGetsAClearConditionAndNoDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	broken := &kustomizev1.Kustomization{}
	broken.Name, broken.Namespace = "broken", shop.Name
	broken.Labels = map[string]string{"reflux.dev/tier": "apps"}
	broken.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
	broken.Spec = kustomizev1.KustomizationSpec{
		Interval: metav1.Duration{Duration: time.Minute}, Path: "./", Prune: true,
		SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "does-not-exist"},
	}
	g.Expect(env.Client.Create(ctx, broken)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, broken) })
	g.Eventually(func() string {
		k := &kustomizev1.Kustomization{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(broken), k); err != nil {
			return err.Error()
		}
		if c := conditions.Get(k, refluxv1.DriftedCondition); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return "no Drifted condition"
	}, timeout, interval).Should(Equal("Unknown/" + refluxv1.KustomizationNotReadyReason))
	list := &refluxv1.DriftList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(shop.Name), client.MatchingLabels{"reflux.dev/kustomization-name": "broken"})).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())
}
