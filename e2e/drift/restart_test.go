package drift

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestRestartKeepsRecordsAndFirstSeen runs after the web replicas case: a
// new reflux process finds the records Flux's revert would have erased
// from the cluster, and keeps their first-seen times.
func TestRestartKeepsRecordsAndFirstSeen(t *testing.T) {
	g := NewWithT(t)
	before := shop.WaitRecord(g, "Deployment", "web", func(r *refluxv1.Drift) error { return nil })
	f0, err := fixture.Field(before, "/spec/replicas")
	g.Expect(err).ToNot(HaveOccurred())

	g.Expect(current.Stop()).To(Succeed())
	current, err = startReflux(context.Background(), "reflux-restarted")
	g.Expect(err).ToNot(HaveOccurred())

	d := deployment(g, "web")
	d.Spec.Replicas = new(int32(6))
	editAsAlice(g, d, "kubectl-edit")
	after := shop.WaitRecord(g, "Deployment", "web", func(r *refluxv1.Drift) error {
		f, err := fixture.Field(r, "/spec/replicas")
		if err != nil {
			return err
		}
		if f.LiveValue != "6" {
			return fmt.Errorf("live value %s", f.LiveValue)
		}
		return nil
	})
	f1, _ := fixture.Field(after, "/spec/replicas")
	g.Expect(after.Name).To(Equal(before.Name), "no duplicate record")
	g.Expect(after.Spec.FirstSeen.Equal(&before.Spec.FirstSeen)).To(BeTrue())
	g.Expect(f1.FirstSeen.Equal(f0.FirstSeen)).To(BeTrue(), "the divergence is as old as it was")
	g.Expect(fixture.Held(deployment(g, "web"))).To(BeTrue())
}

// autoscalingScale builds the scale subresource body the HPA writes.
type autoscalingScale struct {
	Spec struct{ Replicas int32 }
}

func (s *autoscalingScale) object(d *appsv1.Deployment) *autoscalingv1.Scale {
	sc := &autoscalingv1.Scale{}
	sc.Name, sc.Namespace = d.Name, d.Namespace
	sc.Spec.Replicas = s.Spec.Replicas
	return sc
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
