package helmlive

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// postRenderer is a HelmRelease's spec.postRenderers, in release.yaml at
// line 20: a kustomize patch that runs the chart's Deployment at four
// replicas, where the chart renders two.
const postRenderer = `  postRenderers:
    - kustomize:
        patches:
          - target:
              kind: Deployment
            patch: |
              - op: replace
                path: /spec/replicas
                value: 4
`

// TestAFieldAPostRendererSetsIsRefusedByName (issue 19 §5): alice scales
// a Deployment whose replicas the HelmRelease's post-renderer sets. The
// change is held and recorded, and its origin is refused as
// post-renderer, pointing at spec.postRenderers in Git: a change of the
// replicaCount key, which the chart alone would trace it to, would not
// change what helm-controller deploys.
func TestAFieldAPostRendererSetsIsRefusedByName(t *testing.T) {
	g := NewWithT(t)
	app := newApp(t, "postrendered", "", postRenderer)
	g.Expect(replicas(g, app)).To(Equal(int32(4)), "the post-renderer's replicas, not the chart's two")

	scale(g, app, 6)
	_, f := tracedField(g, app, "/spec/replicas", "post-renderer")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{Kind: "post-renderer", Refused: "post-renderer", EditAt: "release/release.yaml:24",
		Template: "templates/deployment.yaml:8",
		Why:      "a post-renderer of the HelmRelease (spec.postRenderers) sets the field after the chart renders it; the chart alone renders 2"}))
	g.Expect(f.GitValue).To(Equal("4"), "the release's manifest, post-rendered")
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held all the same")
}
