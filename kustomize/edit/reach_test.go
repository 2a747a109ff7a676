package edit

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestWalkImages(t *testing.T) {
	g := NewWithT(t)
	obj := map[string]interface{}{
		"spec": map[string]interface{}{
			"jobTemplate": map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
				"containers":     []interface{}{map[string]interface{}{"name": "a", "image": "a:1"}},
				"initContainers": []interface{}{map[string]interface{}{"name": "b", "image": "b:1"}, map[string]interface{}{"name": "no-image"}},
			}}}},
			"containers": map[string]interface{}{"image": "not-a-list:1"},
			"sidecars":   []interface{}{map[string]interface{}{"image": "not-a-container-list:1"}},
			"example.com/tools": map[string]interface{}{
				"containers": []interface{}{map[string]interface{}{"image": "c:1"}},
			},
		},
	}
	got := map[string]string{}
	walkImages("", obj, func(ptr, image string) { got[ptr] = image })
	g.Expect(got).To(Equal(map[string]string{
		"/spec/jobTemplate/spec/template/spec/containers/0/image":     "a:1",
		"/spec/jobTemplate/spec/template/spec/initContainers/0/image": "b:1",
		"/spec/example.com~1tools/containers/0/image":                 "c:1",
	}))
}
