package edit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

func corpusOptions(t *testing.T, tree, fluxFile string) kustomize.BuildOptions {
	t.Helper()
	root := filepath.Join("..", "testdata", tree)
	return buildOptions(t, caseSpec{Kustomization: fluxFile}, root)
}

func TestPlanRefuses(t *testing.T) {
	tests := []struct {
		name   string
		tree   string
		flux   string
		change Change
		check  func(g *WithT, err error)
	}{
		{
			name: "value produced by a name affix",
			tree: "base-overlays", flux: "flux-kustomization-dev.yaml",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Namespace: "dev", Name: "dev-podinfo"}, Pointer: "/metadata/name", Value: "x"},
			check:  func(g *WithT, err error) { g.Expect(err).To(MatchError(ErrUnsupported)) },
		},
		{
			name: "reference rewritten with a hash suffix",
			tree: "configmap-generator", flux: "flux-kustomization.yaml",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "app"}, Pointer: "/spec/template/spec/containers/0/envFrom/0/configMapRef/name", Value: "x"},
			check: func(g *WithT, err error) {
				var re *origin.RefusedError
				g.Expect(errors.As(err, &re)).To(BeTrue())
				g.Expect(re.Reason).To(Equal(origin.ReasonHashSuffix))
			},
		},
		{
			name: "variable defined in a substituteFrom source",
			tree: "postbuild-substitution", flux: "flux-kustomization.yaml",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "billing"}, Pointer: "/spec/template/spec/containers/0/env/1/value", Value: "x"},
			check:  func(g *WithT, err error) { g.Expect(err).To(MatchError(ErrUnsupported)) },
		},
		{
			name:   "overlay patch overridden by a later transformer",
			tree:   "labels-annotations",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "checkout"}, Pointer: "/metadata/labels/team", Value: "payments"},
			check: func(g *WithT, err error) {
				var ve *VerifyError
				g.Expect(errors.As(err, &ve)).To(BeTrue())
			},
		},
		{
			name:   "unknown field",
			tree:   "plain-dir",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "web"}, Pointer: "/spec/paused", Value: true},
			check:  func(g *WithT, err error) { g.Expect(err).To(MatchError(origin.ErrFieldNotFound)) },
		},
		{
			name:   "unknown object",
			tree:   "plain-dir",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "nope"}, Pointer: "/spec/replicas", Value: int64(1)},
			check:  func(g *WithT, err error) { g.Expect(err).To(MatchError(origin.ErrObjectNotFound)) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Plan(context.Background(), Options{Build: corpusOptions(t, tt.tree, tt.flux)}, tt.change)
			g.Expect(err).To(HaveOccurred())
			tt.check(g, err)
		})
	}
}

func TestVerifyErrorListsWhatMoved(t *testing.T) {
	g := NewWithT(t)
	// Renaming a Deployment through its resource moves the object itself.
	_, err := Plan(context.Background(), Options{Build: corpusOptions(t, "plain-dir", "")},
		Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "web"}, Pointer: "/metadata/name", Value: "web2"})
	var ve *VerifyError
	g.Expect(errors.As(err, &ve)).To(BeTrue())
	g.Expect(ve.Moved).NotTo(BeEmpty())
	g.Expect(ve.Error()).To(ContainSubstring("Deployment//web2"))
}

func TestDirectoryBuiltByTwoFluxKustomizationsIsShared(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(kustomize.CopyTree("../testdata/plain-dir", filepath.Join(root, "apps"))).To(Succeed())
	for _, cluster := range []string{"staging", "prod"} {
		ks := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\nspec:\n  path: ./apps\n"
		dir := filepath.Join(root, "clusters", cluster)
		g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "apps.yaml"), []byte(ks), 0o644)).To(Succeed())
	}
	ref := origin.ObjectRef{Kind: "Deployment", Name: "web"}
	change := Change{Object: ref, Pointer: "/spec/replicas", Value: int64(3)}
	build := kustomize.BuildOptions{Root: root, Path: "apps"}

	_, err := Plan(context.Background(), Options{Build: build}, change)
	g.Expect(err).To(MatchError(ErrShared))

	res, err := Plan(context.Background(), Options{Build: build, AllowSharedFiles: true}, change)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Files).To(HaveKey("apps/deployment.yaml"))
}
