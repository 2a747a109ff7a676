package fleet

import (
	"errors"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ref is a remote cluster as Kustomizations name it: the kubeconfig
// Secret, and the key holding the kubeconfig when one is named, or the
// ConfigMap of a workload identity (spec.kubeConfig.configMapRef).
// Kustomizations that name the same Secret and key share one engine.
type Ref struct {
	Namespace, Secret, Key string
	// ConfigMap, when set, names the workload identity's ConfigMap, and
	// Secret and Key are empty.
	ConfigMap string
}

// String is how a Drift record names the cluster (spec.kustomization.
// cluster): the Secret or ConfigMap, in the record's own namespace.
func (r Ref) String() string {
	switch {
	case r.ConfigMap != "":
		return "ConfigMap/" + r.ConfigMap
	case r.Key != "":
		return "Secret/" + r.Secret + "#" + r.Key
	}
	return "Secret/" + r.Secret
}

// ConfigMapKey is the workload identity ConfigMap's key.
func (r Ref) ConfigMapKey() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.ConfigMap}
}

// SecretKey is the Secret's key.
func (r Ref) SecretKey() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Secret}
}

// ErrUnsupportedKubeConfig is a spec.kubeConfig reflux cannot follow.
var ErrUnsupportedKubeConfig = errors.New("unsupported spec.kubeConfig")

// RefOf returns the remote cluster Flux applies obj to, a Kustomization
// or a HelmRelease, and false when Flux applies it to the cluster reflux
// runs in. As kustomize-controller and helm-controller do, a secretRef
// wins over a configMapRef; a kubeConfig that names neither is
// ErrUnsupportedKubeConfig, which reflux says rather than watching the
// hub.
func RefOf(obj client.Object) (Ref, bool, error) {
	var kc *meta.KubeConfigReference
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		kc = o.Spec.KubeConfig
	case *helmv2.HelmRelease:
		kc = o.Spec.KubeConfig
	default:
		return Ref{}, false, fmt.Errorf("fleet: %T names no cluster", obj)
	}
	switch {
	case kc == nil:
		return Ref{}, false, nil
	case kc.SecretRef != nil && kc.SecretRef.Name != "":
		return Ref{Namespace: obj.GetNamespace(), Secret: kc.SecretRef.Name, Key: kc.SecretRef.Key}, true, nil
	case kc.ConfigMapRef != nil && kc.ConfigMapRef.Name != "":
		return Ref{Namespace: obj.GetNamespace(), ConfigMap: kc.ConfigMapRef.Name}, true, nil
	}
	return Ref{}, true, fmt.Errorf("%w: spec.kubeConfig names neither a Secret nor a ConfigMap", ErrUnsupportedKubeConfig)
}
