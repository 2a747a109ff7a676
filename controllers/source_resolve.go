package controllers

import (
	"context"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/kustomize"
)

// ResolveSource reads a Kustomization's source artifact and resolves its
// postBuild.substituteFrom data exactly as the Kustomization reconciler
// does, so `reflux trace --kustomization NS/NAME` builds what reflux and
// kustomize-controller build.
func ResolveSource(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization) (*meta.Artifact, []kustomize.SubstituteSource, error) {
	src, err := sourceOf(ctx, c, ks)
	if err != nil {
		return nil, nil, err
	}
	subst, err := substituteFrom(ctx, c, ks)
	if err != nil {
		return nil, nil, err
	}
	return src.Artifact, subst, nil
}
