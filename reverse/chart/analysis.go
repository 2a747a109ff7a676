package chart

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// Analysis traces the fields of one chart rendered for one release back
// to the values keys that set them, by rendering the chart again with
// keys changed (probes). It keeps every probe's outcome, so a second
// Find, or a Map, reuses the renders of the first. Its methods may be
// called from several goroutines; they run one at a time.
type Analysis struct {
	mu   sync.Mutex
	r    renderer
	user map[string]any // the release's values, normalized
	full map[string]any // what the templates see: user over the chart's
	base *Rendering
	// fields holds each baseline object's leaf fields by pointer.
	fields []map[string]any
	leaves []leaf
	// sentinels[i] is what probes change leaves[i] to; tokenized[i] says
	// whether it can be found by text in a render of many at once.
	sentinels []any
	tokenized []bool
	src       *sources
	locs      map[locKey]Location
	// solo holds the probe of each key changed alone; groups the probes
	// of several keys at once, by set.
	solo   map[int]*effect
	groups map[string]*effect
	// batched tells whether the marked batches are rendered; attrib
	// holds the keys they explain each field with.
	batched  bool
	batches  []*batch
	attrib   map[fieldRef][]attribution
	explored map[fieldRef]bool
	renders  int
	mapped   *Map
}

// fieldRef names one leaf field of the baseline render.
type fieldRef struct {
	obj int // index in base.Objects
	ptr string
}

// effect is a probe's outcome: the error it failed to render with, or
// the baseline objects it changed.
type effect struct {
	err     error
	objects map[int]*objectChange
}

// changeOf returns what e did to f.
func (e *effect) changeOf(f fieldRef) (change, bool) {
	oc, ok := e.objects[f.obj]
	if !ok {
		return change{}, false
	}
	if oc.gone {
		return change{kind: changedGone}, true
	}
	c, ok := oc.fields[f.ptr]
	return c, ok
}

// Analyze renders ch with the release's values (an error here is the
// chart's or the values' fault, and is returned wrapped) and prepares to
// trace its fields. It renders once; Find and Map render more.
func Analyze(ch *chartv2.Chart, values map[string]any, rel Release) (*Analysis, error) {
	user, err := normalize(values)
	if err != nil {
		return nil, err
	}
	r := renderer{chart: ch, rel: rel}
	base, err := r.render(user, true, nil)
	if err != nil {
		return nil, err
	}
	full, err := r.coalesced(user)
	if err != nil {
		return nil, err
	}
	a := &Analysis{r: r, user: user, full: full, base: base, src: newSources(ch),
		locs: map[locKey]Location{}, solo: map[int]*effect{}, groups: map[string]*effect{},
		attrib: map[fieldRef][]attribution{}, explored: map[fieldRef]bool{}, renders: 1}
	a.leaves = leaves(full, user, globalCopies(ch))
	a.sentinels = make([]any, len(a.leaves))
	a.tokenized = make([]bool, len(a.leaves))
	for i, l := range a.leaves {
		a.sentinels[i], a.tokenized[i] = sentinel(i, l.value)
		a.tokenized[i] = a.tokenized[i] && i < 100000 // markers have five digits
	}
	a.fields = make([]map[string]any, len(base.Objects))
	for i, o := range base.Objects {
		m := map[string]any{}
		jsonptr.WalkLeaves(o.Object.Object, "", func(p string, v any) { m[p] = v })
		a.fields[i] = m
	}
	return a, nil
}

// globalCopies skips the global table Helm copies into each dependency's
// values: the top-level global overrides it, so changing the copy
// changes nothing.
func globalCopies(ch *chartv2.Chart) func([]step) bool {
	deps := map[string]bool{}
	for _, d := range ch.Dependencies() {
		deps[d.Name()] = true
	}
	if ch.Metadata != nil {
		for _, d := range ch.Metadata.Dependencies {
			deps[d.Name] = true
			if d.Alias != "" {
				deps[d.Alias] = true
			}
		}
	}
	return func(s []step) bool {
		return len(s) == 2 && deps[s[0].name] && s[1].name == "global"
	}
}

// Keys lists the objects the chart renders with the release's values, in
// render order.
func (a *Analysis) Keys() []ObjectKey {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ObjectKey, 0, len(a.base.Objects))
	for _, o := range a.base.Objects {
		out = append(out, o.Key)
	}
	return out
}

// Renders is how many times the analysis has rendered the chart.
func (a *Analysis) Renders() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.renders
}

// Find says which values key sets the field at ptr (a JSON pointer) of
// the object rendered under key.
func (a *Analysis) Find(key ObjectKey, ptr string) (Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	oi, ok := a.base.byKey[key]
	if !ok {
		return Result{}, fmt.Errorf("%w: %s", ErrObjectNotFound, key)
	}
	if _, ok := a.fields[oi][ptr]; !ok {
		return Result{}, fmt.Errorf("%w: %s in %s", ErrFieldNotFound, ptr, key)
	}
	if a.mapped != nil {
		res, _ := a.mapped.Lookup(key, ptr)
		return res, nil
	}
	f := fieldRef{obj: oi, ptr: ptr}
	a.explore([]fieldRef{f})
	return a.result(f), nil
}

// value returns the baseline value of f.
func (a *Analysis) value(f fieldRef) any {
	return a.fields[f.obj][f.ptr]
}

// probe renders the release's values with the keys in set changed to
// their sentinels, and diffs the render against the baseline. Probes are
// kept: the same set never renders twice.
func (a *Analysis) probe(set []int) *effect {
	if len(set) == 1 {
		if e, ok := a.solo[set[0]]; ok {
			return e
		}
	} else if e, ok := a.groups[setKey(set)]; ok {
		return e
	}
	e := &effect{}
	if rnd, err := a.renderWith(set); err != nil {
		e.err = err
	} else {
		e.objects = diff(a.base, rnd)
	}
	if len(set) == 1 {
		a.solo[set[0]] = e
	} else {
		a.groups[setKey(set)] = e
	}
	return e
}

// renderWith renders with the keys in set changed to their sentinels.
func (a *Analysis) renderWith(set []int) (*Rendering, error) {
	vals, _ := copyTree(a.user).(map[string]any)
	for _, i := range set {
		if err := put(vals, a.full, a.leaves[i].steps, a.sentinels[i]); err != nil {
			return nil, fmt.Errorf("change %s: %w", keyPath(a.leaves[i].steps), err)
		}
	}
	a.renders++
	return a.r.render(vals, false, a.base)
}

func setKey(set []int) string {
	var b strings.Builder
	for i, v := range set {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}

// key describes leaf i for a field of obj.
func (a *Analysis) key(i int, obj Object) Key {
	l := a.leaves[i]
	return Key{Path: keyPath(l.steps), Pointer: keyPointer(l.steps), InUserValues: l.inUser, Value: l.value,
		Template: a.locate(i, obj.Template, obj.Key.Kind)}
}

// allFields lists every leaf field of the baseline, object by object.
func (a *Analysis) allFields() []fieldRef {
	var out []fieldRef
	for i, o := range a.base.Objects {
		jsonptr.WalkLeaves(o.Object.Object, "", func(p string, _ any) { out = append(out, fieldRef{obj: i, ptr: p}) })
	}
	return out
}
