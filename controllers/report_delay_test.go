package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestReportDelayFor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(reportDelayFor(false)).To(Equal(reportDelay))
	g.Expect(reportDelayFor(true)).To(Equal(burstReportDelay))
	g.Expect(burstReportDelay).To(BeNumerically(">", reportDelay), "a burst spaces reports out")
}

// TestCoalescedReportsComeAtTheEarliestTimeAsked: record changes during a
// burst ask for their report later, and one asked for earlier still comes
// when it was due; every change meanwhile is merged into that one report.
func TestCoalescedReportsComeAtTheEarliestTimeAsked(t *testing.T) {
	g := NewWithT(t)
	clock := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	defer q.ShutDown()
	id := types.NamespacedName{Namespace: "flux-system", Name: "apps"}
	busy := false
	h := coalesce(func(context.Context, client.Object) ([]reconcile.Request, time.Duration) {
		return []reconcile.Request{{NamespacedName: id}}, reportDelayFor(busy)
	})
	change := func() {
		h.Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: &refluxv1.Drift{}}, q)
	}
	due := func(after time.Duration) {
		t.Helper()
		clock.Step(after)
		g.Eventually(q.Len).Should(Equal(1))
		req, _ := q.Get()
		g.Expect(req.NamespacedName).To(Equal(id))
		q.Done(req)
		q.Forget(req)
	}

	change()
	busy = true // the burst begins
	for range 50 {
		change()
	}
	clock.Step(reportDelay - time.Millisecond)
	g.Consistently(q.Len, 50*time.Millisecond).Should(BeZero())
	due(time.Millisecond)

	for range 50 {
		change()
	}
	clock.Step(burstReportDelay - time.Millisecond)
	g.Consistently(q.Len, 50*time.Millisecond).Should(BeZero(), "during a burst, the next report comes burstReportDelay later")
	due(time.Millisecond)
	g.Expect(q.Len()).To(BeZero(), "every change of the burst in one report")
}
