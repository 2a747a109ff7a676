package chart

import "sort"

// Map is the origin of every leaf field of every object one release of a
// chart renders, for trace and the benchmarks; reflux's mapper finds
// fields one by one instead, through a Cache of Analyses, which keeps
// their Map once made.
// Nothing changes a Map once Analysis.Map has returned it, so goroutines
// may share it; they must not change the Results it hands out either.
type Map struct {
	results map[ObjectKey]map[string]Result
	renders int
}

// Map traces every leaf field of the release at once. Renders are shared
// between fields: a key is probed alone once, whatever number of fields
// it sets, and keys the chart never reads are cleared in groups.
func (a *Analysis) Map() *Map {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mapped != nil {
		return a.mapped
	}
	fields := a.allFields()
	a.explore(fields)
	m := &Map{results: map[ObjectKey]map[string]Result{}}
	for _, f := range fields {
		res := a.result(f)
		byPtr, ok := m.results[res.Object]
		if !ok {
			byPtr = map[string]Result{}
			m.results[res.Object] = byPtr
		}
		byPtr[f.ptr] = res
	}
	m.renders = a.renders
	a.mapped = m
	return m
}

// Lookup returns the origin of the field at ptr of the object under key.
func (m *Map) Lookup(key ObjectKey, ptr string) (Result, bool) {
	res, ok := m.results[key][ptr]
	return res, ok
}

// Len is the number of fields mapped.
func (m *Map) Len() int {
	n := 0
	for _, byPtr := range m.results {
		n += len(byPtr)
	}
	return n
}

// Renders is how many renders the analysis had made when the map was
// complete, the baseline included.
func (m *Map) Renders() int {
	return m.renders
}

// Results lists every field's origin, by object key, then pointer.
func (m *Map) Results() []Result {
	out := make([]Result, 0, m.Len())
	for _, byPtr := range m.results {
		for _, res := range byPtr {
			out = append(out, res)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object.String() < out[j].Object.String()
		}
		return out[i].Pointer < out[j].Pointer
	})
	return out
}
