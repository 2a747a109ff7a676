package chart

// Key is one values key that sets, or conditions, a rendered field.
type Key struct {
	// Path is the key in the notation of doc.go: resources.limits.memory,
	// env[0].value.
	Path string
	// Pointer is the same key as a JSON pointer into the values:
	// /resources/limits/memory, /env/0/value.
	Pointer string
	// InUserValues tells whether the release's values set the key, rather
	// than only the chart's values.yaml.
	InUserValues bool
	// Value is the key's value as the templates see it: the release's, or
	// the chart's default.
	Value any
	// Template is where the chart's templates read the key.
	Template Location
}

// Result is where one rendered field's value comes from.
type Result struct {
	Object  ObjectKey
	Pointer string
	// Value is the field as rendered with the release's values.
	Value any
	Kind  Kind
	// Keys change the field's value: exactly one for KindValues and
	// KindChartDefault, one or more for KindComputed, none for
	// KindTemplateLiteral. In key order.
	Keys []Key
	// Conditions are keys whose change removes the field or its object,
	// or adds or removes a list element before it: sidecar.enabled for
	// the sidecar's image, autoscaling.enabled for replicas.
	Conditions []Key
	// Template is where the chart sets the field: the first of Keys that
	// a template reads, or, for a template literal, the line that holds
	// it. Zero when the heuristic of locate.go finds nothing.
	Template Location
	// Unprobed are keys that no sentinel could change without the chart
	// failing to render, so whether they change the field is not known.
	Unprobed []string
}

// Key returns the one key that sets the field, for KindValues and
// KindChartDefault.
func (r Result) Key() (Key, bool) {
	if (r.Kind == KindValues || r.Kind == KindChartDefault) && len(r.Keys) == 1 {
		return r.Keys[0], true
	}
	return Key{}, false
}

// result classifies f from the probes held: a key's solo probe where
// there is one, else what the marked render explained (batch.go).
func (a *Analysis) result(f fieldRef) Result {
	obj := a.base.Objects[f.obj]
	val := a.value(f)
	res := Result{Object: obj.Key, Pointer: f.ptr, Value: val}
	var outs []outcome
	add := func(i int, c change) {
		outs = append(outs, outcome{leaf: i, inUser: a.leaves[i].inUser, value: a.leaves[i].value,
			sentinel: a.sentinels[i], change: c})
	}
	batched := map[int]string{}
	for _, at := range a.attrib[f] {
		batched[at.leaf] = at.value
	}
	for i := range a.leaves {
		e, ok := a.solo[i]
		switch {
		case ok && e.err != nil:
			res.Unprobed = append(res.Unprobed, keyPath(a.leaves[i].steps))
		case ok:
			if c, changed := e.changeOf(f); changed {
				add(i, c)
			}
		default:
			if v, explained := batched[i]; explained {
				add(i, change{kind: changedValue, value: v})
			}
		}
	}
	v := classify(val, outs)
	res.Kind = v.kind
	for _, o := range v.keys {
		k := a.key(o.leaf, obj)
		res.Keys = append(res.Keys, k)
		if res.Template.Line == 0 {
			res.Template = k.Template
		}
	}
	for _, o := range v.conditions {
		res.Conditions = append(res.Conditions, a.key(o.leaf, obj))
	}
	if len(res.Keys) == 0 {
		res.Template = a.src.literal(obj.Template, obj.Key.Kind, f.ptr, val)
	}
	return res
}
