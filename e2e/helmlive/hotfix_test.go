package helmlive

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestAManualHotfixOfAChartsObjectIsHeldAndNeverBranched (issue 19 §7:
// manual hotfixes work as for Kustomizations; e2e/journey's
// TestAnnotatedManualHotfixIsLoggedHeldAndNeverBranched for those): alice
// scales the chart's Deployment and marks it with the policy's manual
// hotfix annotation in the same patch. reflux holds it with
// helm-controller's key, records every field as the hotfix (Ignore, rule
// manual-hotfix) with a Normal event, and never writes it to Git, though
// replicaCount has a values line a branch could change. helm-controller's
// drift correction leaves it alone.
func TestAManualHotfixOfAChartsObjectIsHeldAndNeverBranched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	app := newApp(t, "hotfixed", "", "  values:\n    replicaCount: 2\n")
	before := env.Git.Requests(app.Repo)
	_, err := env.KubectlAs(ctx, alice.User, "-n", app.Name, "patch", "deployment/app", "--type=merge",
		"-p", `{"metadata":{"annotations":{"`+refluxv1.DefaultManualHotfixKey+`":"`+refluxv1.DefaultManualHotfixValue+`"}},"spec":{"replicas":4}}`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := app.WaitRecord(g, "Deployment", "app", fixture.All(fixture.HasField("/spec/replicas"), fixture.InState(refluxv1.DriftHeld)))
	g.Expect(rec.Spec.ManualHotfix).To(BeTrue())
	g.Expect(rec.Spec.HelmRelease).To(Equal(&refluxv1.HelmReleaseRef{Namespace: app.Name, Name: "app", Release: app.Name + "/app.v1"}))
	g.Expect(rec.Status.Action).To(Equal(refluxv1.DriftManualHotfix))
	for _, f := range rec.Spec.Fields {
		g.Expect([]any{f.Action, f.Rule}).To(Equal([]any{refluxv1.IgnoreAction, "manual-hotfix"}), f.Pointer)
	}
	// The values line is still found: the record says where Git sets
	// what alice changed, though nothing proposes changing it.
	_, f := tracedField(g, app, "/spec/replicas", "")
	g.Expect(fmt.Sprintf("%s:%d", f.Origin.File, f.Origin.Line)).To(Equal("release/release.yaml:21"))
	ev := app.Event(g, "ManualHotfix", "app")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))

	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held with helm-controller's key")
	g.Expect(heldForHelm(app.Get(g, "app-settings", &corev1.ConfigMap{}))).To(BeFalse(), "only the edited object is held")
	for range 2 {
		reconciled(g, app)
		g.Expect(replicas(g, app)).To(Equal(int32(4)), "held against helm-controller's drift correction")
	}
	// No branch, now or at the next write-back chance.
	g.Consistently(func() []string { return fixture.Branches(t, env, app.Repo) }, 3*time.Second, 500*time.Millisecond).Should(BeEmpty())
	g.Expect(env.Git.Requests(app.Repo).Sub(before).ReceivePack).To(BeZero(), "nothing was pushed")
}

// TestAManualHotfixOfAChartsObjectExpiresAndIsReleased (issue 19 §7:
// expiry works as for Kustomizations; e2e/journey's
// TestManualHotfixHoldExpiresAndReleases for those): a policy bounds
// manual hotfixes to a few seconds with onExpiry: Release. alice's hotfix
// of the chart's Deployment is held with helm-controller's key and an
// expiry time; past it, the record closes as Expired with HoldExpired,
// the hold is released, and helm-controller's drift correction puts the
// chart's replicas back. It is not held again.
func TestAManualHotfixOfAChartsObjectExpiresAndIsReleased(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const maxAge = 5 * time.Second
	name := "hotfix-expiry"
	app := newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: files(name, "", "  values:\n    replicaCount: 2\n"),
		Paths: map[string]string{name: "./release"}, Policy: func(p *refluxv1.ReverseSyncPolicy) {
			p.Spec.ManualHotfix = refluxv1.ManualHotfix{Key: refluxv1.DefaultManualHotfixKey, Value: refluxv1.DefaultManualHotfixValue,
				MaxAge: &metav1.Duration{Duration: maxAge}, OnExpiry: refluxv1.ExpiryRelease}
		}})
	_, err := env.KubectlAs(ctx, alice.User, "-n", app.Name, "patch", "deployment/app", "--type=merge",
		"-p", `{"metadata":{"annotations":{"`+refluxv1.DefaultManualHotfixKey+`":"`+refluxv1.DefaultManualHotfixValue+`"}},"spec":{"replicas":4}}`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := app.WaitRecord(g, "Deployment", "app", func(d *refluxv1.Drift) error {
		if d.Status.HoldExpiresAt == nil {
			return fmt.Errorf("record %s is %q, with no expiry yet", d.Name, d.Status.State)
		}
		return nil
	})
	g.Expect(rec.Spec.ManualHotfix).To(BeTrue())
	g.Expect(rec.Spec.HelmRelease).NotTo(BeNil())

	rec = app.WaitRecord(g, "Deployment", "app", func(d *refluxv1.Drift) error {
		c := apimeta.FindStatusCondition(d.Status.Conditions, refluxv1.HoldExpiredCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != refluxv1.HoldReleasedReason || d.Status.State != refluxv1.DriftExpired {
			return fmt.Errorf("record %s is %q with HoldExpired %+v", d.Name, d.Status.State, c)
		}
		return nil
	})
	ev := app.Event(g, refluxv1.HoldExpiredEventReason, "app")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Eventually(func(g Gomega) {
		d := app.Get(g, "app", &appsv1.Deployment{}).(*appsv1.Deployment)
		g.Expect(heldForHelm(d)).To(BeFalse(), "released")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(2)), "helm-controller corrected the drift once released")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Consistently(func() bool { return heldForHelm(app.Get(g, "app", &appsv1.Deployment{})) }, 3*time.Second, 250*time.Millisecond).
		Should(BeFalse(), "never held again for the hotfix that expired")
	g.Expect(app.Records(g, "Deployment", "app")[0].Status.State).To(Equal(refluxv1.DriftExpired))
}
