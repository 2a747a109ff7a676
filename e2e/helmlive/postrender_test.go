package helmlive

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// postRenderer is a HelmRelease's spec.postRenderers, in release.yaml
// from line 20 (its patch's value on line 28): a kustomize patch that runs the chart's Deployment at four
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

// TestAFieldAPostRendererSetsTracesToItsPatch (issue 19 §5): alice
// scales a Deployment whose replicas the HelmRelease's post-renderer
// sets. The change is held and recorded, and its origin is the line of
// the post-renderer's patch that sets it, not the replicaCount key that
// the chart alone would trace it to: a change of that key would not
// change what helm-controller deploys. Write-back proposes nothing for
// it, and says so.
func TestAFieldAPostRendererSetsTracesToItsPatch(t *testing.T) {
	g := NewWithT(t)
	app := newApp(t, "postrendered", "", postRenderer)
	g.Expect(replicas(g, app)).To(Equal(int32(4)), "the post-renderer's replicas, not the chart's two")

	scale(g, app, 6)
	rec, f := tracedField(g, app, "/spec/replicas", "")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 28, Kind: "post-renderer",
		Template: "templates/deployment.yaml:8"}), "the patch's value: 4 line")
	g.Expect(f.GitValue).To(Equal("4"), "the release's manifest, post-rendered")
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held all the same")
	const why = "a post-renderer's patch of the HelmRelease sets the field, at release/release.yaml:28: it is not written back"
	app.WaitRecord(g, "Deployment", "app", func(d *refluxv1.Drift) error {
		if c := apimeta.FindStatusCondition(d.Status.Conditions, refluxv1.ReverseSyncedCondition); d.Name != rec.Name || c == nil ||
			!strings.Contains(c.Message, why) {
			return fmt.Errorf("record %s's ReverseSynced is not write-back's word on the post-renderer yet: %v", d.Name, c)
		}
		return nil
	})
}
