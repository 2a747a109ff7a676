package testenv

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// Held reports whether reflux holds obj: Flux's reconcile annotation set
// to disabled and reflux's held-by annotation naming the record, as the
// engine itself reads a hold. The reconcile annotation alone is not
// reflux's hold; anyone may set it.
func Held(obj client.Object) bool {
	a := obj.GetAnnotations()
	return a[refluxv1.ReconcileAnnotation] == refluxv1.ReconcileDisabled && a[refluxv1.HeldByAnnotation] != ""
}
