package drift

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestRestartKeepsRecordsAndFirstSeen runs after the web replicas case: a
// new reflux process finds the records Flux's revert would have erased
// from the cluster, and keeps their first-seen times.
func TestRestartKeepsRecordsAndFirstSeen(t *testing.T) {
	g := NewWithT(t)
	before := recordFor(g, "Deployment", "web", func(r *refluxv1.Drift) error { return nil })
	f0, err := field(before, "/spec/replicas")
	g.Expect(err).ToNot(HaveOccurred())

	current.stop()
	_, err = startReflux()
	g.Expect(err).ToNot(HaveOccurred())

	d := deployment(g, "web")
	d.Spec.Replicas = new(int32(6))
	editAsAlice(g, d, "kubectl-edit")
	after := recordFor(g, "Deployment", "web", func(r *refluxv1.Drift) error {
		f, err := field(r, "/spec/replicas")
		if err != nil {
			return err
		}
		if f.LiveValue != "6" {
			return fmt.Errorf("live value %s", f.LiveValue)
		}
		return nil
	})
	f1, _ := field(after, "/spec/replicas")
	g.Expect(after.Name).To(Equal(before.Name), "no duplicate record")
	g.Expect(after.Spec.FirstSeen.Equal(&before.Spec.FirstSeen)).To(BeTrue())
	g.Expect(f1.FirstSeen.Equal(f0.FirstSeen)).To(BeTrue(), "the divergence is as old as it was")
	g.Expect(isHeld(deployment(g, "web"))).To(BeTrue())
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
