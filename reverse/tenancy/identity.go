package tenancy

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// Identity returns the user a Kustomization's writes go out as:
// system:serviceaccount:<its namespace>:<spec.serviceAccountName>, or the
// default ServiceAccount in its namespace when the spec names none, as
// kustomize-controller impersonates (fluxcd/pkg/runtime/client's
// Impersonator). "" means reflux's own identity: neither is set.
func Identity(ks *kustomizev1.Kustomization, defaultServiceAccount string) string {
	return identity(ks.Namespace, ks.Spec.ServiceAccountName, defaultServiceAccount)
}

// HelmIdentity is Identity for a HelmRelease: the user helm-controller
// installs and upgrades its release as, and so the one reflux holds and
// releases the release's objects as. A tenant's chart then cannot make
// reflux touch what the tenant's own ServiceAccount may not.
func HelmIdentity(hr *helmv2.HelmRelease, defaultServiceAccount string) string {
	return identity(hr.Namespace, hr.Spec.ServiceAccountName, defaultServiceAccount)
}

func identity(namespace, name, defaultServiceAccount string) string {
	if name == "" {
		name = defaultServiceAccount
	}
	if name == "" {
		return ""
	}
	return serviceaccount.MakeUsername(namespace, name)
}
