package chart

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Release names the Helm release a chart renders for, as helm template's
// flags do. Capabilities are Helm's defaults: the render never talks to a
// cluster, so lookup returns nothing, as in helm template.
type Release struct {
	Name      string
	Namespace string
	// Revision is .Release.Revision; 1 when zero, as for an install.
	Revision int
	// IsUpgrade renders as an upgrade rather than an install.
	IsUpgrade bool
	// ClusterScoped tells whether objects of a kind have no namespace.
	// Nil means BuiltinClusterScoped; a caller with a cluster passes its
	// RESTMapper's answer, so custom cluster-scoped kinds key right too.
	ClusterScoped func(schema.GroupKind) bool
}

// ObjectKey identifies a rendered object as the cluster will hold it.
type ObjectKey struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String renders the key as apiVersion/kind/[namespace/]name.
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.APIVersion + "/" + k.Kind + "/" + k.Name
	}
	return k.APIVersion + "/" + k.Kind + "/" + k.Namespace + "/" + k.Name
}

// Object is one rendered object and where it came from.
type Object struct {
	Key ObjectKey
	// Template is the chart file that rendered it, relative to the top
	// chart: templates/deployment.yaml, charts/db/templates/sts.yaml.
	Template string
	// Index is its place among the objects Template rendered, from 0.
	Index int
	// Object is the object as rendered, without the namespace Key adds.
	Object *unstructured.Unstructured
}

// Rendering is every object a chart rendered, ordered by Template, then
// Index.
type Rendering struct {
	Objects []Object
	byKey   map[ObjectKey]int
	// files holds each template's output and the objects parsed from it,
	// for the next render of the same chart to reuse.
	files map[string]renderedFile
}

type renderedFile struct {
	text    string
	objects []Object
}

// Get returns the object rendered under key.
func (r *Rendering) Get(key ObjectKey) (Object, bool) {
	i, ok := r.byKey[key]
	if !ok {
		return Object{}, false
	}
	return r.Objects[i], true
}

// Render renders ch offline with the release's values, as helm template
// does, and splits the result into objects. values are the release's own
// (spec.values merged with valuesFrom); the chart's values.yaml is
// coalesced under them by Helm.
func Render(ch *chartv2.Chart, values map[string]any, rel Release) (*Rendering, error) {
	vals, err := normalize(values)
	if err != nil {
		return nil, err
	}
	return renderer{chart: ch, rel: rel}.render(vals, true, nil)
}

// renderer renders one chart for one release with any values.
type renderer struct {
	chart *chartv2.Chart
	rel   Release
}

// render renders vals, which it does not keep. validate checks them
// against values.schema.json as Helm does; probes skip it, because a
// sentinel is there to be traced, not to be valid. A template whose
// output is the same as in prev reuses prev's objects rather than parse
// them again: a probe changes one key, and parsing every document of
// every probe cost as much as rendering them.
func (r renderer) render(vals map[string]any, validate bool, prev *Rendering) (*Rendering, error) {
	ch, err := r.prepare(vals)
	if err != nil {
		return nil, err
	}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, r.options(), common.DefaultCapabilities, !validate)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRender, ch.Name(), err)
	}
	files, err := engine.Engine{}.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRender, ch.Name(), err)
	}
	return r.split(ch.Name(), files, prev)
}

// coalesced returns the values the templates see: vals over the chart's
// defaults, dependencies' included.
func (r renderer) coalesced(vals map[string]any) (map[string]any, error) {
	ch, err := r.prepare(vals)
	if err != nil {
		return nil, err
	}
	c, err := util.CoalesceValues(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRender, ch.Name(), err)
	}
	return c, nil
}

// prepare enables, disables and aliases dependencies for vals, as helm
// install does before it renders. Helm does that by changing the chart,
// so it is done on a copy: the caller's chart, and the next probe's
// values, see the chart as loaded.
func (r renderer) prepare(vals map[string]any) (*chartv2.Chart, error) {
	if len(r.chart.Dependencies()) == 0 && (r.chart.Metadata == nil || len(r.chart.Metadata.Dependencies) == 0) {
		return r.chart, nil
	}
	ch := cloneChart(r.chart)
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("%w: %s: dependencies: %w", ErrRender, ch.Name(), err)
	}
	return ch, nil
}

func (r renderer) options() common.ReleaseOptions {
	rev := r.rel.Revision
	if rev == 0 {
		rev = 1
	}
	return common.ReleaseOptions{Name: r.rel.Name, Namespace: r.rel.Namespace, Revision: rev,
		IsUpgrade: r.rel.IsUpgrade, IsInstall: !r.rel.IsUpgrade}
}

// split parses every rendered file into objects. NOTES.txt is text, not
// manifests, and helm template leaves it out too.
func (r renderer) split(top string, files map[string]string, prev *Rendering) (*Rendering, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if !strings.HasSuffix(name, "NOTES.txt") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := &Rendering{byKey: map[ObjectKey]int{}, files: map[string]renderedFile{}}
	for _, name := range names {
		rel := strings.TrimPrefix(name, top+"/")
		objs, err := r.parse(rel, files[name], prev)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRender, top, err)
		}
		out.files[rel] = renderedFile{text: files[name], objects: objs}
		for _, o := range objs {
			if _, dup := out.byKey[o.Key]; dup {
				return nil, fmt.Errorf("%w: %s: %s rendered twice", ErrRender, top, o.Key)
			}
			out.byKey[o.Key] = len(out.Objects)
			out.Objects = append(out.Objects, o)
		}
	}
	return out, nil
}

// parse parses one template's output into keyed objects, or takes them
// from prev when the template wrote the same text there.
func (r renderer) parse(file, text string, prev *Rendering) ([]Object, error) {
	if prev != nil {
		if f, ok := prev.files[file]; ok && f.text == text {
			return f.objects, nil
		}
	}
	objs, err := parseDocuments(file, text)
	if err != nil {
		return nil, err
	}
	for i := range objs {
		objs[i].Key = r.key(objs[i].Object)
	}
	return objs, nil
}

// key keys u as the cluster will hold it: an object without a namespace
// lands in the release's namespace, unless its kind is cluster-scoped.
func (r renderer) key(u *unstructured.Unstructured) ObjectKey {
	k := ObjectKey{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	scoped := r.rel.ClusterScoped
	if scoped == nil {
		scoped = BuiltinClusterScoped
	}
	if k.Namespace == "" && !scoped(u.GroupVersionKind().GroupKind()) {
		k.Namespace = r.rel.Namespace
	}
	return k
}

// cloneChart copies what chartutil.ProcessDependencies changes: the
// metadata's dependency list, the dependency set and every chart's
// values (import-values rewrites them).
func cloneChart(c *chartv2.Chart) *chartv2.Chart {
	cp := *c
	if c.Metadata != nil {
		md := *c.Metadata
		md.Dependencies = make([]*chartv2.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			dc := *d
			md.Dependencies[i] = &dc
		}
		cp.Metadata = &md
	}
	cp.Values, _ = copyTree(c.Values).(map[string]any)
	deps := make([]*chartv2.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		deps = append(deps, cloneChart(d))
	}
	cp.SetDependencies(deps...)
	return &cp
}
