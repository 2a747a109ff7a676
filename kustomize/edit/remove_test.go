package edit

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// TestRemoveRefuses covers the removals that are refused by name, each on
// a real-looking tree; the removals that are written are golden trees
// (testdata/remove-*).
func TestRemoveRefuses(t *testing.T) {
	tests := []struct {
		name   string
		tree   string
		flux   string
		root   string // a tree of this package's testdata, instead of tree
		change Change
		check  func(g *WithT, err error)
	}{
		{
			name: "declared in a base two overlays build",
			tree: "base-overlays", flux: "flux-kustomization-dev.yaml",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Namespace: "dev", Name: "dev-podinfo"},
				Pointer: "/spec/template/spec/containers/0/resources/requests/cpu", Remove: true},
			check: func(g *WithT, err error) {
				g.Expect(err).To(MatchError(ErrShared))
				g.Expect(err.Error()).To(ContainSubstring("base/deployment.yaml"))
			},
		},
		{
			name: "declared in the base and again in the overlay's patch",
			tree: "smp-patch-files", flux: "flux-kustomization.yaml",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "api"}, Pointer: "/metadata/annotations/owner", Remove: true},
			check: func(g *WithT, err error) {
				// Deleting the patch's line brings the base's value back:
				// the re-render says so.
				var ve *VerifyError
				g.Expect(errors.As(err, &ve)).To(BeTrue(), "%v", err)
				g.Expect(ve.Error()).To(ContainSubstring("/metadata/annotations/owner"))
			},
		},
		{
			name:   "in a flow-style map",
			root:   "testdata/unicode-flow-map/original",
			change: Change{Object: origin.ObjectRef{Kind: "ConfigMap", Name: "office"}, Pointer: "/metadata/labels/país", Remove: true},
			check: func(g *WithT, err error) {
				g.Expect(err).To(MatchError(ErrUnsupported))
				g.Expect(err.Error()).To(ContainSubstring("flow-style"))
			},
		},
		{
			name:   "the first key of a list item, on the dash's line",
			tree:   "plain-dir",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "web"}, Pointer: "/spec/template/spec/containers/0/ports/0/containerPort", Remove: true},
			check: func(g *WithT, err error) {
				g.Expect(err).To(MatchError(ErrUnsupported))
				g.Expect(err.Error()).To(ContainSubstring("shares its line"))
			},
		},
		{
			name:   "a field Git does not declare",
			tree:   "plain-dir",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "web"}, Pointer: "/spec/paused", Remove: true},
			check: func(g *WithT, err error) {
				// Nothing to remove: the render already lacks it.
				var ve *VerifyError
				g.Expect(errors.As(err, &ve)).To(BeTrue(), "%v", err)
				g.Expect(ve.Moved).To(BeEmpty())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			build := buildOptions(t, caseSpec{}, tt.root)
			if tt.root == "" {
				build = corpusOptions(t, tt.tree, tt.flux)
			}
			_, err := Plan(context.Background(), Options{Build: build}, tt.change)
			g.Expect(err).To(HaveOccurred())
			tt.check(g, err)
		})
	}
}
