package tenancy

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// Identity returns the user a Kustomization's writes go out as:
// system:serviceaccount:<its namespace>:<spec.serviceAccountName>, or the
// default ServiceAccount in its namespace when the spec names none, as
// kustomize-controller impersonates (fluxcd/pkg/runtime/client's
// Impersonator). "" means reflux's own identity: neither is set.
func Identity(ks *kustomizev1.Kustomization, defaultServiceAccount string) string {
	name := ks.Spec.ServiceAccountName
	if name == "" {
		name = defaultServiceAccount
	}
	if name == "" {
		return ""
	}
	return serviceaccount.MakeUsername(ks.Namespace, name)
}
