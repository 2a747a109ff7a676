package release

import (
	"context"
	"errors"
	"fmt"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	helmstorage "helm.sh/helm/v4/pkg/storage"
	helmdriver "helm.sh/helm/v4/pkg/storage/driver"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	// ErrReleaseNotFound means Helm's storage holds no release of that
	// name and version: its Secret was deleted, or never written.
	ErrReleaseNotFound = errors.New("release not found in Helm storage")
	// ErrReleaseUndecodable means the release's Secret exists but Helm's
	// storage driver cannot decode it, or it holds another release than
	// the one it is named for.
	ErrReleaseUndecodable = errors.New("release in Helm storage cannot be decoded")
)

// SecretGetter reads one object by key. controller-runtime's client.Reader,
// and so client.Client, satisfies it. Helm's storage driver reads one
// Secret through it; the engine should pass a reader that does not cache
// every Secret of the cluster (an APIReader, or a cache limited to the
// owner=helm label).
type SecretGetter interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

// Load reads the release ref names through Helm's own storage, with the
// Secrets driver in ref.StorageNamespace, as helm-controller configures
// it (action.WithStorage with its default driver). It returns
// ErrReleaseNotFound or ErrReleaseUndecodable, wrapped, when the release
// is not there or not readable; any other error is the apiserver's.
func Load(ctx context.Context, secrets SecretGetter, ref Ref) (*helmrelease.Release, error) {
	if secrets == nil {
		return nil, errors.New("release: secret getter must not be nil")
	}
	src := &secretSource{ctx: ctx, get: secrets, namespace: ref.StorageNamespace}
	driver := helmdriver.NewSecrets(src)
	rel, err := helmstorage.Init(driver).Get(ref.Name, ref.Version)
	switch {
	case errors.Is(err, helmdriver.ErrReleaseNotFound):
		return nil, fmt.Errorf("release %s in namespace %s: %w", ref, ref.StorageNamespace, ErrReleaseNotFound)
	case err != nil && src.fetched:
		// The Secret was read, so the driver failed to decode it.
		return nil, fmt.Errorf("release %s in namespace %s: %w: %w", ref, ref.StorageNamespace, ErrReleaseUndecodable, err)
	case err != nil:
		return nil, fmt.Errorf("reading release %s from namespace %s: %w", ref, ref.StorageNamespace, err)
	}
	// helm-controller supports only Helm's v1 release records
	// (action.LastRelease: "only the Chart API v2 is supported").
	rls, ok := rel.(*helmrelease.Release)
	if !ok {
		return nil, fmt.Errorf("release %s: %w: a %T, not a v1 release", ref, ErrReleaseUndecodable, rel)
	}
	if rls.Name != ref.Name || rls.Namespace != ref.Namespace || rls.Version != ref.Version {
		return nil, fmt.Errorf("release %s: %w: it holds %s/%s.v%d", ref, ErrReleaseUndecodable,
			rls.Namespace, rls.Name, rls.Version)
	}
	return rls, nil
}
