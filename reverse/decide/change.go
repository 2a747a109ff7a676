package decide

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// holdAnnotations are what reflux itself writes to a live object.
var holdAnnotations = []string{refluxv1.ReconcileAnnotation, refluxv1.HelmDriftDetectionAnnotation, refluxv1.HeldByAnnotation,
	refluxv1.HeldSinceAnnotation}

// Meaningful reports whether an update of a live object changed more than
// the bookkeeping and reflux's own hold, and so is worth evaluating: the
// hold must not make reflux look at the object again, which would cost a
// dry run per change. The live watch drops the rest before they queue.
func Meaningful(old, cur *unstructured.Unstructured) bool {
	if old.GetResourceVersion() == cur.GetResourceVersion() {
		return false
	}
	return !equality.Semantic.DeepEqual(comparable(old), comparable(cur))
}

func comparable(u *unstructured.Unstructured) map[string]interface{} {
	c := u.DeepCopy()
	c.SetResourceVersion("")
	c.SetManagedFields(nil)
	c.SetGeneration(0)
	if a := c.GetAnnotations(); a != nil {
		for _, k := range holdAnnotations {
			delete(a, k)
		}
		if len(a) == 0 {
			a = nil // absent and empty are the same annotations
		}
		c.SetAnnotations(a)
	}
	return c.Object
}
