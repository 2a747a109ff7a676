package helmlive

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/chart/postrender"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// postRendererLines finds, for a field of obj (the release's object), the
// line in Git of the HelmRelease's post-renderer entry that sets it
// (postrender.Find): the last one to apply. idx and ref are the
// HelmRelease in the index of the tree that applies it. nil when none is
// found.
func postRendererLines(hr *helmv2.HelmRelease, idx *origin.Index, ref origin.ObjectRef, obj *unstructured.Unstructured) func(string) *refluxv1.FieldOrigin {
	if idx == nil || len(hr.Spec.PostRenderers) == 0 {
		return nil
	}
	return func(pointer string) *refluxv1.FieldOrigin {
		s, ok := postrender.Find(hr.Spec.PostRenderers, obj, pointer)
		if !ok {
			return nil
		}
		o := observe.Origin(idx, ref, s.Path)
		if o == nil || o.Refused != "" || o.Line == 0 {
			return nil
		}
		line, col := s.At(int(o.Line), int(o.Column))
		return &refluxv1.FieldOrigin{File: o.File, Line: int32(line), Column: int32(col), Kind: string(chart.KindPostRenderer)}
	}
}
