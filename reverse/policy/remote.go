package policy

import (
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// RemoteClusterError is a Kustomization Flux applies to another cluster
// through a spec.kubeConfig reflux cannot follow: one that names neither a
// kubeconfig Secret nor a workload identity ConfigMap, which admission
// refuses but kustomize-controller would still take for remote. reflux
// governs remote clusters through either (reverse/fleet); with anything
// else its watches, dry runs and holds would go to the cluster it runs
// in, where the objects Flux applied are not, or are other objects of the
// same names. Callers report it with reason
// refluxv1.RemoteClusterUnsupportedReason.
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
	return fmt.Sprintf("Flux applies this Kustomization to a remote cluster (%s), and reflux reaches remote clusters "+
		"through a kubeconfig Secret (spec.kubeConfig.secretRef) or a workload identity ConfigMap "+
		"(spec.kubeConfig.configMapRef) only: nothing of it is watched, held or recorded, so drift in that cluster "+
		"goes undetected; name either, or remove the %s annotation to opt it out",
		where, refluxv1.ReverseSyncAnnotation)
}

// CheckCluster returns a *RemoteClusterError when Flux applies ks to a
// remote cluster reflux cannot reach: as kustomize-controller does, any
// spec.kubeConfig means a remote cluster, and reflux follows one that
// names a kubeconfig Secret or a workload identity ConfigMap. nil when
// Flux applies ks to the cluster reflux runs in, or to one it reaches.
func CheckCluster(ks *kustomizev1.Kustomization) error {
	ref := ks.Spec.KubeConfig
	switch {
	case ref == nil, ref.SecretRef != nil && ref.SecretRef.Name != "",
		ref.ConfigMapRef != nil && ref.ConfigMapRef.Name != "":
		return nil
	}
	return &RemoteClusterError{Field: "spec.kubeConfig"}
}
