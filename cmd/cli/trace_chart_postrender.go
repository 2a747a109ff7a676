package cli

import (
	"encoding/json"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/chart/postrender"
)

// postRendered is what helm-controller deploys of a chart's render: its
// objects after the HelmRelease's post-renderers.
type postRendered struct {
	renderers []helmv2.PostRenderer
	// keys are the objects' keys, in the chart's order.
	keys    []chart.ObjectKey
	objects map[chart.ObjectKey]postRenderedObject
}

// postRenderedObject is one object after the post-renderers, and the key
// of the chart's object it was made from (sourced false when not known).
type postRenderedObject struct {
	obj     *unstructured.Unstructured
	source  chart.ObjectKey
	sourced bool
}

// postRender renders ch as chart.Render does and applies hr's
// post-renderers, as helm-controller does before it installs; nil when hr
// has none.
func postRender(ch *chartv2.Chart, values map[string]any, rel chart.Release, hr *helmv2.HelmRelease) (*postRendered, error) {
	if len(hr.Spec.PostRenderers) == 0 {
		return nil, nil
	}
	r, err := chart.Render(ch, values, rel)
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, len(r.Objects))
	for i, o := range r.Objects {
		objs[i] = o.Object
	}
	done, err := postrender.Apply(objs, hr.Spec.PostRenderers, hr.GetPostRenderStrategy())
	if err != nil {
		return nil, fmt.Errorf("post-rendering the chart for HelmRelease %s: %w", hr.Name, err)
	}
	out := &postRendered{renderers: hr.Spec.PostRenderers, objects: map[chart.ObjectKey]postRenderedObject{}}
	for _, o := range done {
		p := postRenderedObject{obj: o.Object}
		key := chart.ObjectKey{APIVersion: o.Object.GetAPIVersion(), Kind: o.Object.GetKind(),
			Namespace: o.Object.GetNamespace(), Name: o.Object.GetName()}
		if o.Source >= 0 {
			p.source, p.sourced = r.Objects[o.Source].Key, true
			if key.Namespace == "" {
				key.Namespace = p.source.Namespace // the release's, as the chart's key has it
			}
		} else if key.Namespace == "" && !chart.BuiltinClusterScoped(o.Object.GroupVersionKind().GroupKind()) {
			key.Namespace = rel.Namespace
		}
		if _, dup := out.objects[key]; dup {
			return nil, fmt.Errorf("the post-renderers of HelmRelease %s make two objects %s", hr.Name, key)
		}
		out.keys = append(out.keys, key)
		out.objects[key] = p
	}
	return out, nil
}

// trace traces the field at ptr of the post-rendered object under key, or
// every field of it when ptr is "": as the chart renders it (chartFields)
// where the post-renderers left it so, else to the post-renderer entry
// that sets it.
func (p *postRendered) trace(a *chart.Analysis, key chart.ObjectKey, ptr string, lines valuesLines) ([]chartField, error) {
	o := p.objects[key]
	values := map[string]any{}
	if ptr != "" {
		v, ok := jsonptr.Get(o.obj.Object, ptr)
		if !ok || !jsonptr.IsLeaf(v) {
			return nil, fmt.Errorf("%w: %s in %s", chart.ErrFieldNotFound, ptr, key)
		}
		values[ptr] = v
	} else {
		jsonptr.WalkLeaves(o.obj.Object, "", func(p string, v any) { values[p] = v })
	}
	find := a.Find
	if ptr == "" {
		m := a.Map()
		find = func(k chart.ObjectKey, field string) (chart.Result, error) {
			res, ok := m.Lookup(k, field)
			if !ok {
				return res, chart.ErrFieldNotFound
			}
			return res, nil
		}
	}
	fields := make([]chartField, 0, len(values))
	for field, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", field, err)
		}
		f := chartField{Pointer: field, Value: string(b)}
		var res chart.Result
		rendered := false
		if o.sourced {
			res, err = find(o.source, field)
			rendered = err == nil
		}
		switch {
		case !postRendererChanged(res, rendered, f.Value):
			f.traced = traceResult(res, lines)
		case rendered:
			f.traced = tracePostRendered(p.renderers, o.obj, field, &res, lines)
		default:
			f.traced = tracePostRendered(p.renderers, o.obj, field, nil, lines)
		}
		fields = append(fields, f)
	}
	return fields, nil
}
