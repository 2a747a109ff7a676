package release

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	ssajsondiff "github.com/fluxcd/pkg/ssa/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// IgnorePaths returns the JSON pointers that spec.driftDetection.ignore
// rules select for obj, a desired object from Desired, in rule order.
// helm-controller matches each rule's target against the object it
// applies (jsondiff.UnstructuredList in fluxcd/pkg/ssa), so the selectors
// here are Flux's own: a rule without a target selects every object, and
// names, namespaces and kinds are anchored regular expressions.
func IgnorePaths(rules []helmv2.IgnoreRule, obj *unstructured.Unstructured) ([]string, error) {
	var paths []string
	for i, rule := range rules {
		var sel *ssajsondiff.Selector
		if t := rule.Target; t != nil {
			sel = &ssajsondiff.Selector{
				Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
			}
		}
		sr, err := ssajsondiff.NewSelectorRegex(sel)
		if err != nil {
			return nil, fmt.Errorf("driftDetection.ignore[%d]: %w", i, err)
		}
		if sr.MatchUnstructured(obj) {
			paths = append(paths, rule.Paths...)
		}
	}
	return paths, nil
}
