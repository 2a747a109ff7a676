package manager

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// CacheOptions restrict the manager's cache as Flux's controllers do:
// namespace (when set) to that one namespace, as
// --watch-all-namespaces=false does, and selector (nil for all) to the
// objects reflux reconciles, as --watch-label-selector does, so that each
// shard governs only its own Kustomizations and policies.
func CacheOptions(namespace string, selector labels.Selector) ctrlcache.Options {
	return CacheOptionsFor([]string{namespace}, selector)
}

// CacheOptionsFor is CacheOptions for several namespaces (the namespaced
// profile's --watch-namespaces): the manager's caches list and watch only
// in them, so its Roles need grant nothing elsewhere. Empty names are
// ignored; none at all means the whole cluster.
func CacheOptionsFor(namespaces []string, selector labels.Selector) ctrlcache.Options {
	out := ctrlcache.Options{}
	for _, ns := range namespaces {
		if ns == "" {
			continue
		}
		if out.DefaultNamespaces == nil {
			out.DefaultNamespaces = map[string]ctrlcache.Config{}
		}
		out.DefaultNamespaces[ns] = ctrlcache.Config{}
	}
	if selector != nil && !selector.Empty() {
		out.ByObject = map[ctrlclient.Object]ctrlcache.ByObject{
			&kustomizev1.Kustomization{}:  {Label: selector},
			&refluxv1.ReverseSyncPolicy{}: {Label: selector},
		}
	}
	return out
}

// ClientOptions are the manager's client options: like kustomize-controller,
// read Secrets and ConfigMaps (substituteFrom sources) straight from the
// apiserver instead of caching every one in the cluster beside the live
// watches.
func ClientOptions() ctrlclient.Options {
	return ctrlclient.Options{Cache: &ctrlclient.CacheOptions{DisableFor: []ctrlclient.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}}
}
