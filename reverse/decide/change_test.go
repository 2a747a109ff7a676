package decide

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func cm(rv string, annotations map[string]string, data map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": data}}
	u.SetName("flags")
	u.SetResourceVersion(rv)
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

func TestMeaningful(t *testing.T) {
	data := map[string]interface{}{"A": "1"}
	hold := map[string]string{refluxv1.ReconcileAnnotation: refluxv1.ReconcileDisabled, refluxv1.HeldByAnnotation: "r", refluxv1.HeldSinceAnnotation: "t"}
	tests := []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"same resourceVersion", cm("1", nil, data), cm("1", nil, map[string]interface{}{"A": "2"}), false},
		{"reflux's hold only", cm("1", nil, data), cm("2", hold, data), false},
		{"reflux's hold of a chart's object only", cm("1", nil, data),
			cm("2", refluxv1.HoldAnnotations("r", time.Unix(0, 0), true), data), false},
		{"hold beside other annotations", cm("1", map[string]string{"team": "x"}, data),
			cm("2", map[string]string{"team": "x", refluxv1.ReconcileAnnotation: refluxv1.ReconcileDisabled, refluxv1.HeldByAnnotation: "r"}, data), false},
		{"a data change", cm("1", nil, data), cm("2", nil, map[string]interface{}{"A": "2"}), true},
		{"a human's annotation", cm("1", nil, data), cm("2", map[string]string{"team": "x"}, data), true},
		{"hold plus a human's change", cm("1", nil, data), cm("2", hold, map[string]interface{}{"A": "2"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.cur.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "reflux"}})
			g.Expect(Meaningful(tt.old, tt.cur)).To(Equal(tt.want))
		})
	}
}
