package observe

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
)

// defaultValuesKey is the data key helm-controller reads a valuesFrom
// reference's values from unless it names another.
const defaultValuesKey = "values.yaml"

// ObjectLookup finds a rendered object of the tree.
type ObjectLookup func(kind, namespace, name string) (*unstructured.Unstructured, bool)

// ValuesFromFiles are the files hr's spec.valuesFrom takes its values
// from, where the tree generates the ConfigMap or Secret from a file
// (issue 19 §5): each with its YAML positions, read from the rendered
// data, which is the file's text. The last reference comes first:
// helm-controller merges them in order, so the last that sets a key is
// the one whose line counts (and spec.values over them all).
//
// hr is the HelmRelease as the tree idx indexes renders it. A reference
// with a targetPath, to an object the tree does not render, or to data
// not generated from one file has no file to point at. A file that is no
// values document comes with its Err: which keys it sets is unknown.
func ValuesFromFiles(hr *unstructured.Unstructured, idx *origin.Index, find ObjectLookup) []chart.ValuesFile {
	refs, _, _ := unstructured.NestedSlice(hr.Object, "spec", "valuesFrom")
	var out []chart.ValuesFile
	for i := len(refs) - 1; i >= 0; i-- {
		ref, _ := refs[i].(map[string]any)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		key, _ := ref["valuesKey"].(string)
		target, _ := ref["targetPath"].(string)
		if target != "" || (kind != "ConfigMap" && kind != "Secret") || name == "" {
			continue
		}
		if key == "" {
			key = defaultValuesKey
		}
		obj, ok := find(kind, hr.GetNamespace(), name)
		if !ok {
			continue
		}
		o, err := idx.Lookup(origin.RefOf(obj), "/data/"+jsonptr.Escape(key))
		if err != nil || o.Kind != origin.KindGeneratorFile || o.Line != 1 {
			continue
		}
		text, _, _ := unstructured.NestedString(obj.Object, "data", key)
		data := []byte(text)
		if kind == "Secret" {
			if data, err = base64.StdEncoding.DecodeString(text); err != nil {
				continue
			}
		}
		out = append(out, chart.ParseValuesFile(o.File, data))
	}
	return out
}
