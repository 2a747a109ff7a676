package drift

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

const (
	timeout  = 60 * time.Second
	interval = 100 * time.Millisecond
)

func deployment(g Gomega, name string) *appsv1.Deployment {
	return shop.Get(g, name, &appsv1.Deployment{}).(*appsv1.Deployment)
}

// editAsAlice changes an object the way `kubectl edit` by alice does: a
// plain Update under field manager kubectl-edit (or the one given).
func editAsAlice(g Gomega, obj client.Object, manager string) {
	g.Expect(alice.Client.Update(context.Background(), obj, client.FieldOwner(manager))).To(Succeed())
}

// metric reads a gauge or counter with the given labels from one scrape
// of reflux's /metrics.
func metric(g Gomega, name string, labels map[string]string) (float64, bool) {
	return fixture.Metric(g, current.Process, name, labels)
}

// drifted returns the shop's Drifted condition as "status/reason:
// message", read anew at each call.
func drifted(g Gomega) func() string {
	return func() string { return shop.Condition(g, "shop", refluxv1.DriftedCondition) }
}
