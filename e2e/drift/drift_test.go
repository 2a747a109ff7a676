package drift

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestCleanSyncReportsNothing runs first: right after Flux applied the
// shop, nothing drifts, defaulted fields and Service-like server values
// included.
func TestCleanSyncReportsNothing(t *testing.T) {
	g := NewWithT(t)
	g.Eventually(drifted(g), timeout, interval).Should(HavePrefix(fixture.Clean))
	list := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(shop.Name))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())
}

func TestReplicasEditIsRecordedHeldAndSurvivesFlux(t *testing.T) {
	g := NewWithT(t)
	d := deployment(g, "web")
	d.Spec.Replicas = new(int32(5))
	editAsAlice(g, d, "kubectl-edit")

	rec := shop.WaitRecord(g, "Deployment", "web", fixture.All(fixture.InState(refluxv1.DriftHeld), fixture.Attributed("/spec/replicas")))
	f, _ := fixture.Field(rec, "/spec/replicas")
	g.Expect(f.ChangeType).To(Equal(refluxv1.ChangeUpdate))
	g.Expect(f.GitValue).To(Equal("3"))
	g.Expect(f.LiveValue).To(Equal("5"))
	g.Expect(f.Action).To(Equal(refluxv1.AlertAction))
	g.Expect(f.Severity).To(Equal(refluxv1.SeverityLow))
	g.Expect(f.FluxReverts).To(BeTrue())
	g.Expect(f.Origin).ToNot(BeNil())
	g.Expect(f.Origin.File).To(Equal("overlays/prod/kustomization.yaml"))
	g.Expect(f.Origin.Kind).To(Equal("replicas"))
	g.Expect(f.Origin.Line).To(BeNumerically(">", 0))
	g.Expect(f.Modifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(f.Modifier.User).To(Equal(userName), "the audit webhook names the user")
	g.Expect(rec.Status.HeldSince).ToNot(BeNil())
	g.Expect(fixture.Held(deployment(g, "web"))).To(BeTrue())

	// The hotfix survives kustomize-controller's next reconcile.
	shop.Reconcile(g, "shop")
	g.Expect(*deployment(g, "web").Spec.Replicas).To(BeEquivalentTo(5))

	// Both controllers' conditions survive each other's status writes.
	g.Eventually(drifted(g), timeout, interval).Should(HavePrefix("True/" + refluxv1.DriftDetectedReason + ": "))
	_, msg, _ := strings.Cut(drifted(g)(), ": ")
	g.Expect(msg).To(ContainSubstring("low"))
	shop.Reconcile(g, "shop")
	g.Expect(drifted(g)()).To(HavePrefix("True/"), "kustomize-controller's status write kept reflux's condition")
	g.Expect(shop.Kustomization().Status.Conditions).To(ContainElement(HaveField("Type", "Ready")))

	g.Eventually(func() float64 {
		v, _ := metric(g, "reflux_drift_fields", map[string]string{"kind": "Deployment", "severity": "low", "action": "Alert"})
		return v
	}, timeout, interval).Should(BeNumerically(">=", 1))
	held, ok := metric(g, "reflux_held_objects", map[string]string{"namespace": shop.Name, "kustomization": "shop"})
	g.Expect(ok).To(BeTrue())
	g.Expect(held).To(BeNumerically(">=", 1))
}

func TestImageRollbackIsAHighAlert(t *testing.T) {
	g := NewWithT(t)
	d := deployment(g, "image-worker")
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/worker:1.7.9"
	editAsAlice(g, d, "kubectl-set")
	rec := shop.WaitRecord(g, "Deployment", "image-worker", fixture.HasField("/spec/template/spec/containers/0/image"))
	f, _ := fixture.Field(rec, "/spec/template/spec/containers/0/image")
	g.Expect(f.Action).To(Equal(refluxv1.AlertAction))
	g.Expect(f.Severity).To(Equal(refluxv1.SeverityHigh))
	g.Expect(f.GitValue).To(Equal(`"ghcr.io/example/worker:1.8.0"`))
	g.Expect(f.Origin.File).To(Equal("base/workers.yaml"))
	ev := shop.Event(g, "DriftDetected", "image-worker")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning), "Alert drift is a Warning event")
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-severity", "high"))
	g.Expect(ev.Annotations).To(HaveKey("kustomize.toolkit.fluxcd.io/revision"))
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-origin", ContainSubstring("base/workers.yaml")))
}

func TestNewConfigMapKeyMerges(t *testing.T) {
	g := NewWithT(t)
	cm := shop.ConfigMap(g, "checkout-flags")
	cm.Data["EXPRESS_SHIPPING"] = "true"
	editAsAlice(g, cm, "kubectl-edit")
	rec := shop.WaitRecord(g, "ConfigMap", "checkout-flags",
		fixture.All(fixture.InState(refluxv1.DriftHeld), fixture.HasField("/data/EXPRESS_SHIPPING")))
	f, _ := fixture.Field(rec, "/data/EXPRESS_SHIPPING")
	g.Expect(f.ChangeType).To(Equal(refluxv1.ChangeAdd))
	g.Expect(f.Action).To(Equal(refluxv1.MergeAction))
	g.Expect(f.LiveValue).To(Equal(`"true"`))
	g.Expect(f.Origin.File).To(Equal("base/flags.yaml"), "a new key belongs to the document that declares data")
	g.Expect(rec.Status.Action).To(Equal(refluxv1.DriftMerge))

	// Held, so Flux's next reconcile does not remove the key.
	shop.Reconcile(g, "shop")
	g.Expect(shop.ConfigMap(g, "checkout-flags").Data).To(HaveKeyWithValue("EXPRESS_SHIPPING", "true"))
}

func TestManualHotfixIsLoggedAndHeld(t *testing.T) {
	g := NewWithT(t)
	d := deployment(g, "hotfixed")
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations["ops.source"] = "manual"
	d.Spec.Replicas = new(int32(4))
	editAsAlice(g, d, "kubectl-edit")
	rec := shop.WaitRecord(g, "Deployment", "hotfixed", fixture.InState(refluxv1.DriftHeld))
	g.Expect(rec.Spec.ManualHotfix).To(BeTrue())
	for _, f := range rec.Spec.Fields {
		g.Expect(f.Action).To(Equal(refluxv1.IgnoreAction), f.Pointer)
		g.Expect(f.Rule).To(Equal("manual-hotfix"))
	}
	ev := shop.Event(g, "ManualHotfix", "hotfixed")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))
	shop.Reconcile(g, "shop")
	g.Expect(*deployment(g, "hotfixed").Spec.Replicas).To(BeEquivalentTo(4))
}

func TestSecurityContextChangeIsHigh(t *testing.T) {
	g := NewWithT(t)
	d := deployment(g, "secure-worker")
	d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = new(true)
	editAsAlice(g, d, "kubectl-edit")
	rec := shop.WaitRecord(g, "Deployment", "secure-worker", func(r *refluxv1.Drift) error {
		if r.Status.Severity == "" {
			return fmt.Errorf("status not written yet")
		}
		_, err := fixture.Field(r, "/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation")
		return err
	})
	g.Expect(rec.Status.Severity).To(Equal(refluxv1.SeverityHigh))
}

func TestLimitRaisedFourTimesIsCritical(t *testing.T) {
	g := NewWithT(t)
	d := deployment(g, "batch-worker")
	d.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = mustQuantity("2Gi")
	editAsAlice(g, d, "kubectl-edit")
	rec := shop.WaitRecord(g, "Deployment", "batch-worker", fixture.HasField("/spec/template/spec/containers/0/resources/limits/memory"))
	f, _ := fixture.Field(rec, "/spec/template/spec/containers/0/resources/limits/memory")
	g.Expect(f.Severity).To(Equal(refluxv1.SeverityCritical))
	ev := shop.Event(g, "DriftDetected", "batch-worker")
	g.Expect(ev.Message).To(HavePrefix("critical: "), "a notification rule can page on the prefix")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
}

func TestAutoscalerReplicasAreNotDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	d := deployment(g, "autoscaled")
	scale := &autoscalingScale{}
	scale.Spec.Replicas = 6
	g.Expect(env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale.object(d)),
		client.FieldOwner("kube-controller-manager"))).To(Succeed())
	g.Expect(*deployment(g, "autoscaled").Spec.Replicas).To(BeEquivalentTo(6))

	// A change reflux does report, made after the autoscaler's, proves the
	// autoscaler's write was seen and judged before it.
	marker := deployment(g, "autoscaled")
	if marker.Annotations == nil {
		marker.Annotations = map[string]string{}
	}
	marker.Annotations["reflux.dev/e2e-marker"] = "after-hpa"
	editAsAlice(g, marker, "kubectl-annotate")
	rec := shop.WaitRecord(g, "Deployment", "autoscaled", fixture.HasField("/metadata/annotations/reflux.dev~1e2e-marker"))
	_, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).To(HaveOccurred(), "replicas owned by the autoscaler are not drift")
}

func TestHoldOffLetsFluxRevertAndKeepsTheRecord(t *testing.T) {
	g := NewWithT(t)
	cm := shop.ConfigMap(g, "audit-settings")
	cm.Data["RETENTION_DAYS"] = "7"
	editAsAlice(g, cm, "kubectl-edit")
	rec := shop.WaitRecord(g, "ConfigMap", "audit-settings", fixture.All(fixture.Reported, fixture.HasField("/data/RETENTION_DAYS")))
	g.Expect(rec.Status.State).To(Equal(refluxv1.DriftDetected))
	g.Expect(rec.Status.HeldSince).To(BeNil())
	g.Expect(fixture.Held(shop.ConfigMap(g, "audit-settings"))).To(BeFalse())

	shop.Reconcile(g, "shop")
	g.Expect(shop.ConfigMap(g, "audit-settings").Data).To(HaveKeyWithValue("RETENTION_DAYS", "30"), "Flux reverted it")
	// The evidence outlives the revert.
	g.Consistently(func() error {
		r := &refluxv1.Drift{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(rec), r); err != nil {
			return err
		}
		if _, err := fixture.Field(r, "/data/RETENTION_DAYS"); err != nil {
			return err
		}
		if r.Status.State != refluxv1.DriftDetected {
			return fmt.Errorf("state %q", r.Status.State)
		}
		return nil
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
}

func TestDismissReleasesTheHoldAndFluxRestoresGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	d := deployment(g, "dismissed")
	d.Spec.Replicas = new(int32(7))
	editAsAlice(g, d, "kubectl-edit")
	rec := shop.WaitRecord(g, "Deployment", "dismissed", fixture.InState(refluxv1.DriftHeld))
	g.Expect(fixture.Held(deployment(g, "dismissed"))).To(BeTrue())

	patch := client.MergeFrom(rec.DeepCopy())
	if rec.Annotations == nil {
		rec.Annotations = map[string]string{}
	}
	rec.Annotations[refluxv1.DismissAnnotation] = "true"
	g.Expect(env.Client.Patch(ctx, rec, patch)).To(Succeed())

	shop.WaitRecord(g, "Deployment", "dismissed", fixture.InState(refluxv1.DriftDismissed))
	// reflux released its hold and asked Flux to reconcile: Git wins.
	g.Eventually(func() int32 {
		return *deployment(g, "dismissed").Spec.Replicas
	}, timeout, interval).Should(BeEquivalentTo(1))
	g.Expect(fixture.Held(deployment(g, "dismissed"))).To(BeFalse())

	// A new drift on the same object is a new divergence: the record
	// reopens without the old dismissal, and the object is held again.
	d = deployment(g, "dismissed")
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/web:2.2.0"
	editAsAlice(g, d, "kubectl-set")
	reopened := shop.WaitRecord(g, "Deployment", "dismissed", fixture.InState(refluxv1.DriftHeld))
	g.Expect(reopened.Annotations).ToNot(HaveKey(refluxv1.DismissAnnotation))
	_, err := fixture.Field(reopened, "/spec/template/spec/containers/0/image")
	g.Expect(err).ToNot(HaveOccurred())
	_, err = fixture.Field(reopened, "/spec/replicas")
	g.Expect(err).To(HaveOccurred(), "the dismissed replicas drift is gone: Flux restored it")
	g.Expect(reopened.Status.Branch).To(BeEmpty(), "nothing of the old proposal carries over")
	g.Expect(fixture.Held(deployment(g, "dismissed"))).To(BeTrue())
}
