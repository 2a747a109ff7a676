package source

import (
	"context"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/kustomize"
)

// Source is what reflux reads of a Kustomization's source.
type Source struct {
	// Artifact is the source's current artifact.
	Artifact *meta.Artifact
	// Interval is the source's interval.
	Interval time.Duration
	// URL is the Git repository's URL; "" for other kinds.
	URL string
	// SubstituteFrom is the Kustomization's spec.postBuild.substituteFrom,
	// read.
	SubstituteFrom []kustomize.SubstituteSource
}

// Resolve reads a Kustomization's source artifact and resolves its
// postBuild.substituteFrom data exactly as kustomize-controller does, so
// that the Kustomization reconciler and `reflux trace --kustomization
// NS/NAME` build what kustomize-controller builds.
func Resolve(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization) (Source, error) {
	src, err := artifactOf(ctx, c, ks)
	if err != nil {
		return src, err
	}
	src.SubstituteFrom, err = SubstituteFrom(ctx, c, ks)
	return src, err
}

// GitRepository returns the Kustomization's GitRepository, or nil when its
// source is of another kind.
func GitRepository(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization) (*sourcev1.GitRepository, error) {
	ref := ks.Spec.SourceRef
	if ref.Kind != sourcev1.GitRepositoryKind {
		return nil, nil
	}
	ns := namespaceOf(ks)
	repo := &sourcev1.GitRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, repo); err != nil {
		return nil, fmt.Errorf("getting GitRepository %s/%s: %w", ns, ref.Name, err)
	}
	return repo, nil
}

// namespaceOf is the namespace of the Kustomization's source: its own
// unless the sourceRef names another.
func namespaceOf(ks *kustomizev1.Kustomization) string {
	if ns := ks.Spec.SourceRef.Namespace; ns != "" {
		return ns
	}
	return ks.Namespace
}

// artifactOf returns the Kustomization's source and its current artifact.
// Any Flux source kind serves an artifact; reflux reads it the way
// kustomize-controller does.
func artifactOf(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization) (Source, error) {
	ref := ks.Spec.SourceRef
	ns := namespaceOf(ks)
	var src interface {
		client.Object
		GetArtifact() *meta.Artifact
		GetRequeueAfter() time.Duration
	}
	switch ref.Kind {
	case sourcev1.GitRepositoryKind:
		src = &sourcev1.GitRepository{}
	case sourcev1.OCIRepositoryKind:
		src = &sourcev1.OCIRepository{}
	case sourcev1.BucketKind:
		src = &sourcev1.Bucket{}
	default:
		return Source{}, fmt.Errorf("source kind %q is not supported", ref.Kind)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, src); err != nil {
		return Source{}, fmt.Errorf("getting %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	out := Source{Artifact: src.GetArtifact(), Interval: src.GetRequeueAfter()}
	if repo, ok := src.(*sourcev1.GitRepository); ok {
		out.URL = repo.Spec.URL
	}
	if out.Artifact == nil {
		return out, fmt.Errorf("%s %s/%s has no artifact", ref.Kind, ns, ref.Name)
	}
	return out, nil
}

// SubstituteFrom resolves spec.postBuild.substituteFrom like
// kustomize-controller: a missing optional source is skipped, a missing
// required one is an error.
func SubstituteFrom(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization) ([]kustomize.SubstituteSource, error) {
	if ks.Spec.PostBuild == nil {
		return nil, nil
	}
	var out []kustomize.SubstituteSource
	for _, ref := range ks.Spec.PostBuild.SubstituteFrom {
		key := client.ObjectKey{Namespace: ks.Namespace, Name: ref.Name}
		src := kustomize.SubstituteSource{Kind: ref.Kind, Name: ref.Name, Data: map[string]string{}}
		var err error
		switch ref.Kind {
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err = c.Get(ctx, key, cm); err == nil {
				for k, v := range cm.Data {
					src.Data[k] = v
				}
			}
		case "Secret":
			s := &corev1.Secret{}
			if err = c.Get(ctx, key, s); err == nil {
				for k, v := range s.Data {
					src.Data[k] = string(v)
				}
			}
		default:
			return nil, fmt.Errorf("substituteFrom kind %q is not supported", ref.Kind)
		}
		if apierrors.IsNotFound(err) && ref.Optional {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading substituteFrom %s %s: %w", ref.Kind, key, err)
		}
		out = append(out, src)
	}
	return out, nil
}
