package policy

import (
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// RemoteClusterError is a Kustomization Flux applies to another cluster
// through spec.kubeConfig. reflux does not govern those yet (issue 24):
// its watches, dry runs and holds go to the cluster it runs in, where the
// objects Flux applied are not, or are other objects of the same names.
// Callers report it with reason refluxv1.RemoteClusterUnsupportedReason.
type RemoteClusterError struct {
	// Field is where the kubeconfig is named, such as
	// spec.kubeConfig.secretRef; Kind and Name the object it names, ""
	// when the spec names none.
	Field, Kind, Name string
}

// Error says what is not governed, why, and what the user can do.
func (e *RemoteClusterError) Error() string {
	where := e.Field
	if e.Name != "" {
		where += ": " + e.Kind + " " + e.Name
	}
	return fmt.Sprintf("Flux applies this Kustomization to a remote cluster (%s), and reflux does not yet govern "+
		"Kustomizations applied through spec.kubeConfig: nothing of it is watched, held or recorded, so drift in that "+
		"cluster goes undetected; remove the %s annotation to opt it out", where, refluxv1.ReverseSyncAnnotation)
}

// CheckCluster returns a *RemoteClusterError when Flux applies ks to a
// remote cluster, as kustomize-controller does whenever spec.kubeConfig is
// set, whichever reference it holds; nil when Flux applies ks to the
// cluster reflux runs in.
func CheckCluster(ks *kustomizev1.Kustomization) error {
	ref := ks.Spec.KubeConfig
	switch {
	case ref == nil:
		return nil
	case ref.SecretRef != nil:
		return &RemoteClusterError{Field: "spec.kubeConfig.secretRef", Kind: "Secret", Name: ref.SecretRef.Name}
	case ref.ConfigMapRef != nil:
		return &RemoteClusterError{Field: "spec.kubeConfig.configMapRef", Kind: "ConfigMap", Name: ref.ConfigMapRef.Name}
	}
	return &RemoteClusterError{Field: "spec.kubeConfig"}
}
