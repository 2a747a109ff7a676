package edit

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

func TestPlanAll(t *testing.T) {
	g := NewWithT(t)
	ref := origin.ObjectRef{Kind: "Deployment", Namespace: "prod", Name: "podinfo"}
	opts := Options{Build: corpusOptions(t, "base-overlays", "flux-kustomization-prod.yaml")}
	res, err := PlanAll(context.Background(), opts, []Change{
		{Object: ref, Pointer: "/spec/replicas", Value: int64(4)},
		{Object: ref, Pointer: "/spec/template/spec/containers/0/resources/limits/memory", Value: "1Gi"},
		{Object: ref, Pointer: "/spec/template/spec/containers/0/resources/requests/cpu", Value: "200m"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Scope).To(Equal(ScopeOverlayPatch))
	g.Expect(res.Files).To(HaveKey("overlays/prod/kustomization.yaml"))
	g.Expect(string(res.Files["overlays/prod/kustomization.yaml"])).To(ContainSubstring("count: 4"))
	g.Expect(string(res.Files["overlays/prod/resources.yaml"])).To(ContainSubstring("memory: 1Gi"))
	g.Expect(string(res.Files["overlays/prod/reflux-deployment-podinfo.yaml"])).To(ContainSubstring("cpu: 200m"))

	// A change that cannot be made fails the whole plan.
	_, err = PlanAll(context.Background(), opts, []Change{
		{Object: ref, Pointer: "/spec/replicas", Value: int64(4)},
		{Object: ref, Pointer: "/spec/nope", Value: "x"},
	})
	g.Expect(errors.Is(err, origin.ErrFieldNotFound)).To(BeTrue())
}
