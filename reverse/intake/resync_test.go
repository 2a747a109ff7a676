package intake

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// A resync item waiting on a watch that has not synced (a refused one,
// say) is looked at again within syncWaitMax, never after the resync
// queue's own backoff, which grows to a quarter of an hour.
func TestResyncWaitsForAWatchWithACappedBackoff(t *testing.T) {
	g := NewWithT(t)
	in := newTestIntake(t, time.Now())
	in.opts.Live = store{synced: false}
	in.syncWait = workqueue.NewTypedItemExponentialFailureRateLimiter[Key](time.Millisecond, syncWaitMax)
	k := Key{GVK: SecretGVK, Namespace: "payments", Name: "payments-api"}
	in.resyncItems[k] = Change{Owner: types.NamespacedName{Namespace: "flux-system", Name: "payments"}}
	in.resync.Add(k)
	for range 3 {
		g.Expect(in.processResync(context.Background())).To(BeTrue())
		g.Eventually(in.resync.Len).Should(Equal(1), "looked at again")
	}
	g.Expect(in.resync.NumRequeues(k)).To(BeZero(), "the queue's own backoff is not used")
	for range 30 {
		in.syncWait.When(k)
	}
	g.Expect(in.syncWait.When(k)).To(Equal(syncWaitMax), "however long the watch is refused")
	g.Expect(in.resyncItems).To(HaveKey(k), "the item stays until it is checked")
	g.Expect(in.opts.Handler.(*handled).keys).To(BeEmpty(), "never handled against a store that would miss objects")
}
