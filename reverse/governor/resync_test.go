package governor

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// unsynced is a live store whose watches have not listed yet, or were
// refused: resync items must wait for them.
type unsynced struct{}

func (unsynced) Get(schema.GroupVersionKind, string, string) (*unstructured.Unstructured, bool) {
	return nil, false
}
func (unsynced) Synced(schema.GroupVersionKind) bool { return false }
func (unsynced) Forget(types.NamespacedName)         {}

// A resync item waiting on a watch that has not synced (a refused one,
// say) is looked at again within syncWaitMax, never after the resync
// queue's own backoff, which grows to a quarter of an hour.
func TestResyncWaitsForAWatchWithACappedBackoff(t *testing.T) {
	g := NewWithT(t)
	gv := newRoutingGovernor(t, time.Now())
	gv.opts.Live = unsynced{}
	gv.syncWait = workqueue.NewTypedItemExponentialFailureRateLimiter[objKey](time.Millisecond, syncWaitMax)
	k := objKey{GVK: secretGVK, Namespace: "payments", Name: "payments-api"}
	gv.resyncItems[k] = change{owner: types.NamespacedName{Namespace: "flux-system", Name: "payments"}}
	gv.resync.Add(k)
	for range 3 {
		g.Expect(gv.processResync(context.Background())).To(BeTrue())
		g.Eventually(gv.resync.Len).Should(Equal(1), "looked at again")
	}
	g.Expect(gv.resync.NumRequeues(k)).To(BeZero(), "the queue's own backoff is not used")
	for range 30 {
		gv.syncWait.When(k)
	}
	g.Expect(gv.syncWait.When(k)).To(Equal(syncWaitMax), "however long the watch is refused")
	g.Expect(gv.resyncItems).To(HaveKey(k), "the item stays until it is checked")
}
