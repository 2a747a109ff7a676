package chart

import "github.com/reflux-dev/reflux/internal/jsonptr"

// Kind says where a rendered field's value comes from.
type Kind string

// The kinds of origin a field can have.
const (
	// KindValues: one key of the release's values sets the field, alone
	// and to exactly the key's value. Changing the key in the
	// HelmRelease changes the field.
	KindValues Kind = "values"
	// KindChartDefault: as KindValues, but the key is only in the chart's
	// values.yaml; the release's values would have to add it.
	KindChartDefault Kind = "chart-default"
	// KindTemplateLiteral: no values key changes the field. The template
	// writes it: a literal, or something made of .Release or .Chart.
	KindTemplateLiteral Kind = "template-literal"
	// KindComputed: values keys change the field, but not as one key's
	// value passed through: several keys make it (repository:tag), or the
	// template transforms the value (b64enc, upper, add) or substitutes
	// its own for it (default).
	KindComputed Kind = "computed"
	// KindValuesFrom: as KindValues, but the release's values get the key
	// from a file its spec.valuesFrom takes, not from spec.values. The
	// analysis never says this; the origin of the field does, once the
	// key's line is found in that file.
	KindValuesFrom Kind = "values-from"
	// KindPostRenderer: the HelmRelease's post-renderer, not the chart,
	// sets the field; the origin is its patch's line. The analysis never
	// says this either: it renders without post-renderers.
	KindPostRenderer Kind = "post-renderer"
)

// outcome is what changing one key alone (a solo probe) did to a field.
type outcome struct {
	leaf     int // index of the key among the analysis' leaves
	inUser   bool
	value    any // the key's value
	sentinel any // what the probe changed it to
	change   change
}

// verdict is a field's classification: the kind, the outcomes of the
// keys that change its value, and of those that remove it.
type verdict struct {
	kind       Kind
	keys       []outcome
	conditions []outcome
}

// classify decides where field, as rendered with the release's values,
// comes from, given the solo probes of every key that changes it. A key
// whose change removes the field, or shifts the list it is in, is a
// condition (sidecar.enabled for a sidecar's image), not a source of its
// value. One key whose sentinel comes out exactly as the field's value,
// and whose own value is exactly the field's, sets it; anything else
// that changes the value makes it computed.
func classify(field any, outs []outcome) verdict {
	var v verdict
	for _, o := range outs {
		switch o.change.kind {
		case changedValue:
			v.keys = append(v.keys, o)
		case changedGone, changedShifted:
			v.conditions = append(v.conditions, o)
		}
	}
	switch {
	case len(v.keys) == 0:
		v.kind = KindTemplateLiteral
	case len(v.keys) == 1 && sameScalar(v.keys[0].change.value, v.keys[0].sentinel) && sameScalar(field, v.keys[0].value):
		v.kind = KindChartDefault
		if v.keys[0].inUser {
			v.kind = KindValues
		}
	default:
		v.kind = KindComputed
	}
	return v
}

// sameScalar reports whether a rendered field holds value v: equal as
// decoded (3 and 3.0 are), or equal as text, for a number the template
// quoted or a numeric string it did not.
func sameScalar(field, v any) bool {
	if jsonptr.Equal(field, v) {
		return true
	}
	if !isScalar(field) || !isScalar(v) {
		return false
	}
	return text(field) == text(v)
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, map[string]any, []any:
		return false
	}
	return true
}
