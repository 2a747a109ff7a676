package helmlive

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// Finding the values key behind a field renders the chart, many times
// for a large one (reverse/chart): never on the live path. A walk takes
// the keys already found for the release, and asks the mapper for the
// rest; the mapper finds them on its own worker, keeps them with the
// release, and brings the object back to the live queue, whose next walk
// fills the record's origins in.

// fieldKey is one field of one rendered object of a release.
type fieldKey struct {
	object  chart.ObjectKey
	pointer string
}

// keys is what is known of one release's values keys: its chart's
// analysis, which every release of the same chart and values shares
// (chart.Cache), and the fields found and asked for.
type keys struct {
	mu       sync.Mutex
	analysis *chart.Analysis
	err      error // why the chart could not be analysed
	found    map[fieldKey]chart.Result
	asked    map[fieldKey]intake.Key
}

// found returns the results known for fields of obj, and asks for the
// others, for the object k. It reports whether it asked.
func (ks *keys) lookup(obj chart.ObjectKey, pointers []string, k intake.Key) (map[string]chart.Result, bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	out := make(map[string]chart.Result, len(pointers))
	asked := false
	for _, p := range pointers {
		f := fieldKey{object: obj, pointer: p}
		if res, ok := ks.found[f]; ok {
			out[p] = res
			continue
		}
		if ks.err != nil {
			// The chart cannot be analysed: never asked again, and said.
			out[p] = chart.Result{Object: obj, Pointer: p, Kind: kindRenderFailed}
			continue
		}
		if _, ok := ks.asked[f]; !ok {
			ks.asked[f] = k
			asked = true
		}
	}
	return out, asked
}

// chartCacheSize bounds the charts' analyses kept, one per chart,
// values and release name and namespace in use: each holds its chart, a
// render and the probes made so far. It matches releaseCacheSize, whose
// releases hold on to their analyses too.
const chartCacheSize = releaseCacheSize

// mapper finds values keys off the live path, one release at a time.
type mapper struct {
	queue workqueue.TypedInterface[*made]
	// charts keeps the analyses by chart digest and values hash, so a
	// new release version of the same chart and values (an upgrade
	// something else caused, a rollback) finds its keys without a render
	// (issue 19 §8).
	charts  *chart.Cache
	scoped  func(schema.GroupKind) bool
	requeue func(intake.Key)
	// rendered hears whether a release's chart rendered, once per release.
	rendered func(*made, error)
	log      logr.Logger
}

func newMapper(charts *chart.Cache, scoped func(schema.GroupKind) bool, requeue func(intake.Key), rendered func(*made, error), log logr.Logger) *mapper {
	return &mapper{queue: workqueue.NewTyped[*made](), charts: charts, scoped: scoped, requeue: requeue, rendered: rendered, log: log}
}

// results returns the values keys found for fields of want's object in
// rel, and has the mapper find the others for the object k.
func (m *mapper) results(rel *made, obj chart.ObjectKey, pointers []string, k intake.Key) map[string]chart.Result {
	out, asked := rel.keys.lookup(obj, pointers, k)
	if asked {
		m.queue.Add(rel)
	}
	return out
}

// run finds what is asked until ctx ends.
func (m *mapper) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		m.queue.ShutDown()
	}()
	for {
		rel, shutdown := m.queue.Get()
		if shutdown {
			return
		}
		for _, k := range m.find(rel) {
			m.requeue(k)
		}
		m.queue.Done(rel)
	}
}

// find finds every field asked of rel, and returns the objects to look
// at again.
func (m *mapper) find(rel *made) []intake.Key {
	ks := &rel.keys
	ks.mu.Lock()
	asked := ks.asked
	ks.asked = map[fieldKey]intake.Key{}
	a, err := ks.analysis, ks.err
	ks.mu.Unlock()
	if a == nil && err == nil {
		rls := rel.release
		a, err = m.charts.Analyze(rls.Chart, rls.Config, chart.Release{Name: rls.Name, Namespace: rls.Namespace,
			Revision: rls.Version, IsUpgrade: rls.Version > 1, ClusterScoped: m.scoped})
		if err != nil {
			err = fmt.Errorf("rendering the chart of release %s: %w", rel.ref, err)
			m.log.Error(err, "values keys are not found for this release's fields")
		}
		m.rendered(rel, err)
	}
	found := make(map[fieldKey]chart.Result, len(asked))
	if err == nil {
		for f := range asked {
			res, ferr := a.Find(f.object, f.pointer)
			if ferr != nil {
				res = chart.Result{Object: f.object, Pointer: f.pointer, Kind: kindUnknown}
			}
			found[f] = res
		}
	}
	ks.mu.Lock()
	ks.analysis, ks.err = a, err
	for f, res := range found {
		ks.found[f] = res
	}
	ks.mu.Unlock()
	seen := map[intake.Key]bool{}
	var out []intake.Key
	for _, k := range asked {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// splicedKey is the one key of a computed field whose value, replaced,
// makes the live value from the rendered one, when there is one.
func splicedKey(res chart.Result, git, live string) (chart.Key, bool) {
	var g, l string
	if json.Unmarshal([]byte(git), &g) != nil || json.Unmarshal([]byte(live), &l) != nil {
		return chart.Key{}, false // only text is spliced
	}
	k, _, ok := chart.Spliced(g, l, res.Keys)
	return k, ok && k.InUserValues
}

// kindUnknown is a field the chart's renders do not show: added live, or
// in an object the chart does not render as the release did.
const kindUnknown chart.Kind = "unknown"

// kindRenderFailed is a field of a release whose chart does not render
// here at all (Health.ChartErr says why).
const kindRenderFailed chart.Kind = "chart-render-failed"

// valuesOrigin is a chart's field's origin: the line of spec.values that
// sets its key, in the tree of the Kustomization that applies the
// HelmRelease (idx, where hr is the HelmRelease; nil when no render of it
// is known), or why there is none.
//
// A computed field whose live value differs from the rendered one only
// in one key's value (chart.Spliced: an image's tag) has that key's line
// as its origin, which write-back proposes once the chart's render
// confirms it; git and live are the field's values, as JSON.
func valuesOrigin(res chart.Result, in gitValues, git, live string) *refluxv1.FieldOrigin {
	idx, hr := in.idx, in.hr
	out := &refluxv1.FieldOrigin{Kind: string(res.Kind)}
	if res.Template.Line > 0 {
		out.Template = fmt.Sprintf("%s:%d", res.Template.File, res.Template.Line)
	}
	for _, k := range res.Keys {
		if len(out.ValuesKeys) < 16 {
			out.ValuesKeys = append(out.ValuesKeys, k.Path)
		}
	}
	key, single := res.Key()
	switch {
	case in.postRendered && res.Kind != kindRenderFailed && git != "" && !jsonptr.Matches(res.Value, git):
		// The release has what the chart alone does not render: a
		// post-renderer made it, and no values key would change it.
		if in.patched != nil {
			if o := in.patched(res.Pointer); o != nil {
				o.Template = out.Template
				return o
			}
		}
		out.Refused, out.Kind = string(chart.KindPostRenderer), string(chart.KindPostRenderer)
		out.Why = "a post-renderer of the HelmRelease (spec.postRenderers) sets the field after the chart renders it"
		if res.Kind != kindUnknown {
			out.Why += fmt.Sprintf("; the chart alone renders %s", renderedText(res.Value))
		}
		out.EditAt = observe.FirstLine(idx, hr, "/spec/postRenderers/")
		out.ValuesKeys = nil
		return out
	case res.Kind == kindRenderFailed:
		out.Refused, out.Why = string(res.Kind), "the release's chart does not render here; the HelmRelease's ReverseDrifted condition says why"
	case idx == nil:
		out.Refused, out.Why = "not-indexed", "the tree of the Kustomization that applies the HelmRelease is not rendered yet"
	case res.Kind == kindUnknown:
		out.Refused, out.Why = "not-rendered", "the chart does not render this field"
	case res.Kind == chart.KindTemplateLiteral:
		out.Refused, out.Why = string(res.Kind), "the chart hard-codes the value"
	case res.Kind == chart.KindComputed:
		why := "the chart builds the value from " + strings.Join(out.ValuesKeys, "+")
		if k, ok := splicedKey(res, git, live); ok {
			if o := observe.Origin(idx, hr, "/spec/values"+k.Pointer); o != nil && o.Refused == "" && o.Line > 0 {
				out.ValuesKeys, out.Why = []string{k.Path}, why+"; only "+k.Path+" differs live"
				out.File, out.Line, out.Column = o.File, o.Line, o.Column
				return out
			}
		}
		out.Refused, out.Why = string(res.Kind), why
	case !single:
		out.Refused, out.Why = string(res.Kind), "no single values key sets the field"
	case !key.InUserValues:
		out.Refused = string(chart.KindChartDefault)
		out.Why = "the chart's values.yaml sets " + key.Path + "; add it under spec.values"
		out.EditAt = observe.ValuesAnchor(idx, hr)
	default:
		o := observe.Origin(idx, hr, "/spec/values"+key.Pointer)
		if o != nil && o.Refused == "" && o.Line > 0 {
			out.File, out.Line, out.Column = o.File, o.Line, o.Column
			return out
		}
		// In the release's values, but not in spec.values: the last
		// valuesFrom file that sets it.
		for _, f := range in.files() {
			if f.Err != nil {
				// Which key it sets cannot be read: it may be this one.
				out.Refused, out.Why = string(chart.KindValuesFrom), f.Err.Error()
				return out
			}
			if line, col, ok := f.Position(key.Pointer); ok {
				out.Kind = string(chart.KindValuesFrom)
				out.File, out.Line, out.Column = f.File, int32(line), int32(col)
				return out
			}
		}
		out.Refused, out.Why = string(chart.KindValuesFrom), "the key is set through spec.valuesFrom, from data no file of the tree "+
			"holds as it is (a targetPath, or a ConfigMap or Secret not generated from a file)"
	}
	return out
}

// gitValues is where the tree of the Kustomization that applies a
// HelmRelease sets its values: spec.values in its origin index, and the
// files its spec.valuesFrom takes (observe.ValuesFromFiles), read when
// first asked for. idx is nil while the tree is not rendered.
type gitValues struct {
	idx  *origin.Index
	hr   origin.ObjectRef
	from func() []chart.ValuesFile
	// postRendered: the HelmRelease has spec.postRenderers, which change
	// the release's manifest after the chart renders it; patched finds
	// the line of the patch that sets a field (postRendererLines).
	postRendered bool
	patched      func(pointer string) *refluxv1.FieldOrigin
}

func (g gitValues) files() []chart.ValuesFile {
	if g.from == nil {
		return nil
	}
	return g.from()
}

// renderedText is a rendered value as a record shows values, JSON.
func renderedText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
