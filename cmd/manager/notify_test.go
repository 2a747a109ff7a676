package manager

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestNotifierCoalesces: Send never waits for the reconciler, and a key
// sent many times before the pump runs is delivered once.
func TestNotifierCoalesces(t *testing.T) {
	g := NewWithT(t)
	n := newNotifier()
	a, b := types.NamespacedName{Namespace: "apps", Name: "a"}, types.NamespacedName{Namespace: "apps", Name: "b"}
	for range 100 {
		n.Send(a) // nobody reads yet: must not block
	}
	n.Send(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Start(ctx) }()
	got := map[types.NamespacedName]int{}
	for range 2 {
		select {
		case e := <-n.out:
			got[types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}]++
		case <-time.After(10 * time.Second):
			t.Fatal("no reconcile request")
		}
	}
	g.Expect(got).To(Equal(map[types.NamespacedName]int{a: 1, b: 1}))
	g.Consistently(n.out, 100*time.Millisecond).ShouldNot(Receive(), "each pending key once")
	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()), "the pump stops with its context")
}
