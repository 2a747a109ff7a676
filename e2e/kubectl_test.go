package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

// TestRealKubectlDriftIsReverted drifts a Deployment with the kubectl
// binary itself, so the field managers and subresources are the ones a
// person at a terminal produces, not names we chose.
func TestRealKubectlDriftIsReverted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const target = "deployment/kubectl-target"
	for _, args := range [][]string{
		{"scale", target, "--replicas=4"},
		{"set", "image", target, "app=" + hotfixImage},
		{"annotate", target, "smoke.reflux.dev/note=by-kubectl"},
	} {
		out, err := env.Kubectl(ctx, append(args, "-n", smokeNS)...)
		g.Expect(err).NotTo(HaveOccurred(), string(out))
	}
	deploy := getDeployment(g, "kubectl-target")
	// kubectl scale writes through the scale subresource as plain
	// "kubectl"; Flux's manager cleanup skips subresource entries.
	g.Expect(managers(deploy)).To(ContainElements(
		"kubectl/Update/scale", "kubectl-set/Update", "kubectl-annotate/Update"))
	g.Expect(*deploy.Spec.Replicas).To(BeEquivalentTo(4))
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal(hotfixImage))
	g.Expect(deploy.Annotations).To(HaveKey("smoke.reflux.dev/note"))

	reconcile(g)

	deploy = getDeployment(g, "kubectl-target")
	// Even the scale entry is gone: Flux's forced apply took spec.replicas
	// from it, and the apiserver drops entries that own nothing.
	g.Expect(managers(deploy)).To(Equal([]string{"kustomize-controller/Apply"}))
	g.Expect(*deploy.Spec.Replicas).To(BeEquivalentTo(1), "kubectl scale reverted")
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal(gitImage), "kubectl set image reverted")
	g.Expect(deploy.Annotations).NotTo(HaveKey("smoke.reflux.dev/note"), "kubectl annotate reverted")
}
