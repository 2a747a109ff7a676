package cli

import (
	"encoding/json"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/chart/postrender"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// valuesLines finds where a HelmRelease's spec.values sets a key: pointer
// is the key as a JSON pointer into the values (chart.Key.Pointer).
// anchor is where a key it does not set would be added: FILE:LINE.
// postRenderer is where an entry of its spec.postRenderers that sets a
// field is: FILE:LINE[:COL].
type valuesLines interface {
	line(pointer string) (at string, ok bool)
	anchor() string
	postRenderer(s postrender.Setter) (at string, ok bool)
}

// traced is one field traced through the chart to a values line.
type traced struct {
	// Kind is where the value comes from (reverse/chart.Kind): values,
	// chart-default, template-literal, computed or post-renderer.
	Kind string `json:"kind"`
	// Keys are the values keys that change the field.
	Keys []string `json:"valuesKeys,omitempty"`
	// Origin is FILE:LINE:COL of the key in spec.values; Refused says why
	// there is none, and EditAt where to add the key instead.
	Origin  string `json:"origin,omitempty"`
	Refused string `json:"refused,omitempty"`
	EditAt  string `json:"editAt,omitempty"`
	// Template is the chart template's FILE:LINE that reads the key, or
	// holds the literal.
	Template string `json:"template,omitempty"`
}

// traceResult says where res's key is set: its line, or, for a key only
// the chart's defaults set, where to add it. lines may be nil.
func traceResult(res chart.Result, lines valuesLines) traced {
	out := traced{Kind: string(res.Kind)}
	if res.Template.Line > 0 {
		out.Template = fmt.Sprintf("%s:%d", res.Template.File, res.Template.Line)
	}
	for _, k := range res.Keys {
		out.Keys = append(out.Keys, k.Path)
	}
	key, ok := res.Key()
	if !ok || lines == nil {
		return out
	}
	if !key.InUserValues {
		out.Refused = fmt.Sprintf("chart-default: the chart's values.yaml sets %s; add it under spec.values", key.Path)
		out.EditAt = lines.anchor()
		return out
	}
	if at, ok := lines.line(key.Pointer); ok {
		out.Origin = at
		return out
	}
	// In the release's values, but not in spec.values: valuesFrom.
	out.Refused = "values-from: the key is set through spec.valuesFrom, which is not traced yet"
	return out
}

// postRendererChanged reports whether the HelmRelease's post-renderers
// changed a field from the chart's own render: the chart renders it
// otherwise (res), or not at all (rendered false). value is the field as
// post-rendered, as JSON.
func postRendererChanged(res chart.Result, rendered bool, value string) bool {
	return !rendered || !jsonptr.Matches(res.Value, value)
}

// tracePostRendered traces a field the HelmRelease's post-renderers set,
// which no values key would change, to the line of the entry that sets it
// (postrender.Find over obj, the object as post-rendered), as helmlive's
// origins do; where none is found, or lines is nil, it is refused as
// post-renderer. res is the chart's own render of the field, when there
// is one.
func tracePostRendered(renderers []helmv2.PostRenderer, obj *unstructured.Unstructured, pointer string,
	res *chart.Result, lines valuesLines) traced {
	out := traced{Kind: string(chart.KindPostRenderer)}
	if res != nil && res.Template.Line > 0 {
		out.Template = fmt.Sprintf("%s:%d", res.Template.File, res.Template.Line)
	}
	if s, ok := postrender.Find(renderers, obj, pointer); ok && lines != nil {
		if at, ok := lines.postRenderer(s); ok {
			out.Origin = at
			return out
		}
	}
	out.Refused = "post-renderer: a post-renderer of the HelmRelease (spec.postRenderers) sets the field after the chart renders it"
	if res != nil {
		if v, err := json.Marshal(res.Value); err == nil {
			out.Refused += "; the chart alone renders " + string(v)
		}
	}
	return out
}

// gitValues finds values lines in the origin index of the tree of the
// Kustomization that applies the HelmRelease hr, so overlays and patches
// of spec.values are followed as for any field.
type gitValues struct {
	idx *origin.Index
	hr  origin.ObjectRef
	// from are the values files of spec.valuesFrom the tree generates,
	// the last reference first (the one whose keys win).
	from []fileValues
}

// line is the key's line in spec.values, which helm-controller merges
// over valuesFrom, or else in the last values file that sets it.
func (g gitValues) line(pointer string) (string, bool) {
	if o := observe.Origin(g.idx, g.hr, "/spec/values"+pointer); o != nil && o.Refused == "" && o.Line > 0 {
		return fmt.Sprintf("%s:%d:%d", o.File, o.Line, o.Column), true
	}
	for _, f := range g.from {
		if at, ok := f.line(pointer); ok {
			return at, true
		}
	}
	return "", false
}

// anchor is where a key spec.values does not set would be added
// (observe.ValuesAnchor).
func (g gitValues) anchor() string {
	return observe.ValuesAnchor(g.idx, g.hr)
}

// postRenderer is the line of the post-renderer entry s in the tree:
// its value's, or, in a patch of several lines, the line within it.
func (g gitValues) postRenderer(s postrender.Setter) (string, bool) {
	o := observe.Origin(g.idx, g.hr, s.Path)
	if o == nil || o.Refused != "" || o.Line == 0 {
		return "", false
	}
	line, col := s.At(int(o.Line), int(o.Column))
	if col == 0 {
		return fmt.Sprintf("%s:%d", o.File, line), true
	}
	return fmt.Sprintf("%s:%d:%d", o.File, line, col), true
}
