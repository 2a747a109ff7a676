package journey

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
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// hotfixMaxAge is short so the journeys reach it; they wait on conditions,
// never on the clock.
const hotfixMaxAge = 5 * time.Second

// expiringHotfix makes a fixture whose policy bounds manual hotfixes to
// hotfixMaxAge with onExpiry, declares a hotfix on its worker as alice,
// and returns the record once it is held with its expiry time.
func expiringHotfix(t *testing.T, name string, onExpiry refluxv1.ExpiryAction) (*fixture.App, *refluxv1.Drift, testenv.RequestCounts) {
	g := NewWithT(t)
	f := fixture.NewApp(t, env, name, fixture.AppOptions{Files: fixture.OneFile("worker.yaml", workerYAML),
		Policy: func(p *refluxv1.ReverseSyncPolicy) {
			p.Spec.ManualHotfix = refluxv1.ManualHotfix{Key: refluxv1.DefaultManualHotfixKey, Value: refluxv1.DefaultManualHotfixValue,
				MaxAge: &metav1.Duration{Duration: hotfixMaxAge}, OnExpiry: onExpiry}
		}})
	// Counted before the edit: a push made as the record is written counts.
	before := env.Git.Requests(f.Repo)
	_, err := env.KubectlAs(context.Background(), alice.User, "-n", f.Name, "patch", "deployment/worker", "--type=merge",
		"-p", `{"metadata":{"annotations":{"ops.source":"manual"}},"spec":{"replicas":4}}`)
	g.Expect(err).NotTo(HaveOccurred())
	// On a slow machine the poll may first see the record after a Release
	// already cleared heldSince; the expiry time stays either way.
	rec := f.WaitRecord(g, "Deployment", "worker", func(d *refluxv1.Drift) error {
		if d.Status.HoldExpiresAt == nil || (d.Status.HeldSince == nil && d.Status.State != refluxv1.DriftExpired) {
			return fmt.Errorf("record %s is %q, held since %v, expires at %v", d.Name, d.Status.State, d.Status.HeldSince, d.Status.HoldExpiresAt)
		}
		return nil
	})
	g.Expect(rec.Spec.ManualHotfix).To(BeTrue())
	if rec.Status.HeldSince != nil {
		g.Expect(rec.Status.HoldExpiresAt.Time).To(BeTemporally("==", rec.Status.HeldSince.Add(hotfixMaxAge)),
			"the age counts from the hold")
	}
	return f, rec, before
}

// expiredCondition waits for the record's HoldExpired condition.
func expiredCondition(g Gomega, f *fixture.App, reason string, state refluxv1.DriftState) *refluxv1.Drift {
	return f.WaitRecord(g, "Deployment", "worker", func(d *refluxv1.Drift) error {
		c := apimeta.FindStatusCondition(d.Status.Conditions, refluxv1.HoldExpiredCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || d.Status.State != state {
			return fmt.Errorf("record %s is %q with HoldExpired %+v", d.Name, d.Status.State, c)
		}
		return nil
	})
}

// pagedExpiry waits for the Warning event marked for paging.
func pagedExpiry(g Gomega, f *fixture.App) {
	ev := f.Event(g, governor.HoldExpiredEventReason, "worker")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(ev.Message).To(HavePrefix(governor.CriticalPrefix), "a notification rule can page on the prefix")
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-severity", string(refluxv1.SeverityCritical)))
}

func expiredGauge(g Gomega, f *fixture.App, onExpiry refluxv1.ExpiryAction) {
	g.Eventually(func() float64 {
		v, _ := fixture.Metric(g, suiteReflux.Process, "reflux_hold_expired", map[string]string{
			"namespace": f.Name, "kustomization": f.Name, "kind": "Deployment", "on_expiry": string(onExpiry)})
		return v
	}, fixture.Timeout, fixture.Interval).Should(BeNumerically("==", 1))
}

// TestManualHotfixHoldExpiresAndAlerts (issue 11, break-glass expiry,
// onExpiry: Alert): a hotfix held past manualHotfix.maxAge pages with a
// Warning event and reflux_hold_expired, and stays held against Flux.
func TestManualHotfixHoldExpiresAndAlerts(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f, _, before := expiringHotfix(t, "expiry-alert", refluxv1.ExpiryAlert)

	rec := expiredCondition(g, f, refluxv1.HoldKeptReason, refluxv1.DriftHeld)
	g.Expect(rec.Status.HeldSince).NotTo(BeNil(), "still held")
	g.Expect(rec.Status.HoldExpiresAt).NotTo(BeNil(), "the record shows when it expired")
	pagedExpiry(g, f)
	expiredGauge(g, f, refluxv1.ExpiryAlert)

	g.Expect(fixture.Held(f.Get(g, "worker", &appsv1.Deployment{}))).To(BeTrue())
	f.Reconcile(g, f.Kustomization().Name)
	g.Expect(*f.Get(g, "worker", &appsv1.Deployment{}).(*appsv1.Deployment).Spec.Replicas).To(BeEquivalentTo(4),
		"still held against Flux after expiry")
	g.Expect(env.Git.Requests(f.Repo).Sub(before).ReceivePack).To(BeZero(), "a hotfix is never pushed")
}

// TestManualHotfixHoldExpiresAndReleases (issue 11, break-glass expiry,
// onExpiry: Release): a hotfix held past manualHotfix.maxAge pages, its
// hold is released and its record closed as Expired, and Flux restores
// Git's value; reflux does not hold it again.
func TestManualHotfixHoldExpiresAndReleases(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f, _, before := expiringHotfix(t, "expiry-release", refluxv1.ExpiryRelease)

	rec := expiredCondition(g, f, refluxv1.HoldReleasedReason, refluxv1.DriftExpired)
	g.Expect(rec.Status.HoldExpiresAt).NotTo(BeNil(), "the record shows when it expired")
	pagedExpiry(g, f)
	expiredGauge(g, f, refluxv1.ExpiryRelease)

	// reflux asks Flux to reconcile; Flux restores Git's replicas.
	g.Eventually(func() int32 {
		return *f.Get(g, "worker", &appsv1.Deployment{}).(*appsv1.Deployment).Spec.Replicas
	}, fixture.Timeout, fixture.Interval).Should(BeEquivalentTo(1), "Flux restored Git")
	g.Expect(fixture.Held(f.Get(g, "worker", &appsv1.Deployment{}))).To(BeFalse())
	g.Consistently(func() bool { return fixture.Held(f.Get(g, "worker", &appsv1.Deployment{})) }, 3*time.Second, 250*time.Millisecond).
		Should(BeFalse(), "never held again for the drift that expired")
	g.Expect(f.Records(g, "Deployment", "worker")[0].Status.State).To(Equal(refluxv1.DriftExpired))
	g.Expect(env.Git.Requests(f.Repo).Sub(before).ReceivePack).To(BeZero(), "a hotfix is never pushed")
}

// TestRuleHoldForExpires (issue 11, break-glass expiry): a rule's holdFor
// bounds the holds it asks for the way maxAge bounds a manual hotfix.
func TestRuleHoldForExpires(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := fixture.NewApp(t, env, "expiry-rule", fixture.AppOptions{ReportOnly: true, Files: fixture.OneFile("worker.yaml", workerYAML),
		Rules: []refluxv1.Rule{{Name: "replicas", Fields: []string{"/spec/replicas"}, Action: refluxv1.AlertAction,
			Severity: refluxv1.SeverityLow, HoldFor: &metav1.Duration{Duration: hotfixMaxAge}}}})
	_, err := env.KubectlAs(context.Background(), alice.User, "-n", f.Name, "scale", "deployment/worker", "--replicas=2")
	g.Expect(err).NotTo(HaveOccurred())

	rec := expiredCondition(g, f, refluxv1.HoldKeptReason, refluxv1.DriftHeld)
	g.Expect(rec.Spec.ManualHotfix).To(BeFalse())
	fl, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.Rule).To(Equal("replicas"))
	g.Expect(rec.Status.HoldExpiresAt.Time).To(BeTemporally("==", rec.Status.HeldSince.Add(hotfixMaxAge)))
	pagedExpiry(g, f)
	g.Expect(fixture.Held(f.Get(g, "worker", &appsv1.Deployment{}))).To(BeTrue(), "onExpiry defaults to Alert: still held")
}
