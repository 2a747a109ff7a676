package helmlive

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/release"
)

// releaseCacheSize bounds the releases kept: a few per HelmRelease in
// use is what a live change needs, and each holds its decoded manifest,
// its chart and what was found of its values keys (the chart's analysis
// itself is the mapper's, by chart digest and values hash).
const releaseCacheSize = 64

// releases reads the releases helm-controller made and keeps their
// objects, by release version: Helm never changes a version's manifest,
// so a live change reads Helm's storage once per upgrade, not once per
// change.
type releases struct {
	storage release.SecretGetter
	scoper  release.Scoper
	cache   *lru.Cache
}

// made is one release's objects as helm-controller's diff reads them,
// and what is known of the values keys behind their fields.
type made struct {
	// owner is the HelmRelease whose release it is.
	owner   types.NamespacedName
	ref     release.Ref
	release *helmrelease.Release
	objects []*unstructured.Unstructured
	byKey   map[desired.ObjectKey]*unstructured.Unstructured
	keys    keys
}

func newReleases(storage release.SecretGetter, scoper release.Scoper) *releases {
	return &releases{storage: storage, scoper: scoper, cache: lru.New(releaseCacheSize)}
}

// latest returns the objects of the release helm-controller last made for
// hr. It returns errNotYet, wrapped, while hr names none.
func (r *releases) latest(ctx context.Context, hr *helmv2.HelmRelease) (*made, error) {
	ref, err := release.Latest(hr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotYet, err)
	}
	key := ref.StorageNamespace + "/" + ref.String()
	if m, ok := r.cache.Get(key); ok {
		return m.(*made), nil
	}
	rls, err := release.Load(ctx, r.storage, ref)
	if err != nil {
		return nil, err
	}
	objects, err := release.Desired(rls, r.scoper)
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", ref, err)
	}
	m := &made{owner: types.NamespacedName{Namespace: hr.Namespace, Name: hr.Name}, ref: ref, release: rls, objects: objects, byKey: make(map[desired.ObjectKey]*unstructured.Unstructured, len(objects)),
		keys: keys{found: map[fieldKey]chart.Result{}, asked: map[fieldKey]intake.Key{}}}
	for _, o := range objects {
		m.byKey[desired.KeyOf(o)] = o
	}
	r.cache.Add(key, m)
	return m, nil
}
