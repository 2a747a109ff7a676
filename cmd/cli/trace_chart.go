package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"go.yaml.in/yaml/v3"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/chart/postrender"
)

// chartField is one rendered field of a chart's object, traced to the
// values key that sets it and the key's line.
type chartField struct {
	Pointer string `json:"pointer"`
	Value   string `json:"value"`
	traced
}

// runChartTrace traces fields of an object a chart renders for a
// HelmRelease, after the HelmRelease's post-renderers: offline, from the
// chart (--chart) and the HelmRelease's file (--helmrelease FILE#NAME);
// or live (--helmrelease NAMESPACE/NAME), from the release helm-controller
// made, with the values and post-renderer lines in the tree of the
// Kustomization that applies the HelmRelease.
func runChartTrace(ctx context.Context, cmd ioCmd, opts *traceOptions, ref origin.ObjectRef, pointer []string) error {
	var (
		in  chartInput
		err error
	)
	if ns, name, ok := liveRef(opts.helmRelease); ok {
		in, err = liveChart(ctx, cmd, opts, ns, name)
	} else {
		in, err = offlineChart(opts)
	}
	if err != nil {
		return err
	}
	return traceChart(cmd.OutOrStdout(), opts.output == "json", in, ref, pointer)
}

// traceChart traces the field at pointer (every field when there is none)
// of the object ref names, as in renders it, and prints them.
func traceChart(w io.Writer, asJSON bool, in chartInput, ref origin.ObjectRef, pointer []string) error {
	a, err := chart.Analyze(in.chart, in.values, in.release)
	if err != nil {
		return err
	}
	var ptr string
	if len(pointer) == 1 {
		ptr = normalizePointer(pointer[0])
	}
	var (
		key    chart.ObjectKey
		fields []chartField
	)
	if in.post != nil {
		if key, err = renderedKey(in.post.keys, in.release, ref); err != nil {
			return err
		}
		fields, err = in.post.trace(a, key, ptr, in.lines)
	} else {
		if key, err = renderedKey(a.Keys(), in.release, ref); err != nil {
			return err
		}
		fields, err = chartFields(a, key, ptr, in.lines)
	}
	if err != nil {
		return err
	}
	return printChartTrace(w, asJSON, key, in.post != nil, fields)
}

// chartInput is what a chart trace renders and where it finds lines.
type chartInput struct {
	chart   *chartv2.Chart
	values  map[string]any
	release chart.Release
	// lines finds values and post-renderer lines; nil when they are not
	// known.
	lines valuesLines
	// post is the chart's render after the HelmRelease's post-renderers;
	// nil when it has none.
	post *postRendered
}

// forHelmRelease is in, whose chart, values and release are set, as hr
// deploys it: its render after hr's post-renderers, with its lines. The
// offline and the live trace both end here.
func (in chartInput) forHelmRelease(hr *helmv2.HelmRelease, lines valuesLines) (chartInput, error) {
	post, err := postRender(in.chart, in.values, in.release, hr)
	if err != nil {
		return chartInput{}, err
	}
	in.lines, in.post = lines, post
	return in, nil
}

// chartFields traces the field at ptr of the object the chart renders
// under key, or every field of it when ptr is "".
func chartFields(a *chart.Analysis, key chart.ObjectKey, ptr string, lines valuesLines) ([]chartField, error) {
	var results []chart.Result
	if ptr != "" {
		res, err := a.Find(key, ptr)
		if err != nil {
			return nil, err
		}
		results = []chart.Result{res}
	} else {
		for _, res := range a.Map().Results() {
			if res.Object == key {
				results = append(results, res)
			}
		}
	}
	fields := make([]chartField, 0, len(results))
	for _, res := range results {
		v, err := json.Marshal(res.Value)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", res.Pointer, err)
		}
		fields = append(fields, chartField{Pointer: res.Pointer, Value: string(v), traced: traceResult(res, lines)})
	}
	return fields, nil
}

// offlineChart reads the chart of --chart and the HelmRelease of
// --helmrelease FILE#NAME, with the values files of --values, and renders
// the chart through the HelmRelease's post-renderers.
func offlineChart(opts *traceOptions) (chartInput, error) {
	if opts.chart == "" {
		return chartInput{}, errors.New("--helmrelease FILE#NAME needs --chart, the chart's folder or packaged .tgz")
	}
	ch, err := chart.Load(opts.chart)
	if err != nil {
		return chartInput{}, err
	}
	doc, err := helmReleaseFile(opts.helmRelease)
	if err != nil {
		return chartInput{}, err
	}
	values, files, err := withValuesFiles(doc.values.values, opts.valuesFiles)
	if err != nil {
		return chartInput{}, err
	}
	in := chartInput{chart: ch, values: values, release: doc.release}
	return in.forHelmRelease(doc.hr, offlineValues{doc: doc, from: files})
}

// renderedKey finds, among what the chart renders, the object ref names (its group may be left
// out, and a namespaced object's namespace too when only one matches).
func renderedKey(keys []chart.ObjectKey, rel chart.Release, ref origin.ObjectRef) (chart.ObjectKey, error) {
	var found []chart.ObjectKey
	for _, k := range keys {
		group, _, _ := strings.Cut(k.APIVersion, "/")
		if !strings.Contains(k.APIVersion, "/") {
			group = ""
		}
		if k.Kind == ref.Kind && k.Name == ref.Name && (ref.Namespace == "" || k.Namespace == ref.Namespace) &&
			(ref.Group == "" || group == ref.Group) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return chart.ObjectKey{}, fmt.Errorf("the chart renders no %s for release %s/%s", refString(ref), rel.Namespace, rel.Name)
	}
	return chart.ObjectKey{}, fmt.Errorf("the chart renders %d objects named %s: give KIND.GROUP/NAMESPACE/NAME", len(found), refString(ref))
}

func refString(ref origin.ObjectRef) string {
	kind := ref.Kind
	if ref.Group != "" {
		kind += "." + ref.Group
	}
	if ref.Namespace != "" {
		return kind + "/" + ref.Namespace + "/" + ref.Name
	}
	return kind + "/" + ref.Name
}

// fileValues are a HelmRelease's spec.values as one file declares them,
// with their positions.
type fileValues struct {
	file   string
	values map[string]any
	// spec and node are the HelmRelease's spec and spec.values nodes; node
	// is nil when it sets no values.
	spec, node *yaml.Node
}

func (f fileValues) line(pointer string) (string, bool) {
	line, col, ok := chart.ValuesFile{File: f.file, Node: f.node}.Position(pointer)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s:%d:%d", f.file, line, col), true
}

func (f fileValues) anchor() string {
	for _, n := range []*yaml.Node{f.node, f.spec} {
		if n != nil && n.Kind == yaml.MappingNode && len(n.Content) > 0 {
			return fmt.Sprintf("%s:%d", f.file, n.Content[0].Line)
		}
	}
	return ""
}

// printChartTrace prints the traced fields, ordered by pointer;
// postRendered says the object is the one the HelmRelease's
// post-renderers made of the chart's.
func printChartTrace(w io.Writer, asJSON bool, key chart.ObjectKey, postRendered bool, fields []chartField) error {
	sort.Slice(fields, func(i, j int) bool { return fields[i].Pointer < fields[j].Pointer })
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Object string       `json:"object"`
			Fields []chartField `json:"fields"`
		}{key.String(), fields})
	}
	if postRendered {
		fmt.Fprintf(w, "# %s, as the chart renders it, after the HelmRelease's post-renderers\n", key)
	} else {
		fmt.Fprintf(w, "# %s, as the chart renders it\n", key)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tVALUE\tVALUES KEY\tORIGIN\tTEMPLATE")
	for _, f := range fields {
		h := helmDiffField{Kind: f.Kind, Keys: f.Keys, Origin: f.Origin, Refused: f.Refused, EditAt: f.EditAt}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Pointer, cell(f.Value), keysCell(h), helmOriginCell(h), cell(f.Template))
	}
	return tw.Flush()
}

// readValuesFile reads a Helm values file with its YAML positions.
func readValuesFile(path string) (fileValues, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return fileValues{}, err
	}
	vf := chart.ParseValuesFile(path, data)
	if vf.Err != nil {
		return fileValues{}, vf.Err
	}
	return fileValues{file: path, node: vf.Node}, nil
}

// offlineValues are the values of a HelmRelease file, over values files
// given as its spec.valuesFrom would give them.
type offlineValues struct {
	doc helmReleaseDoc
	// from are the values files, the last given first (its keys win).
	from []fileValues
}

func (o offlineValues) line(pointer string) (string, bool) {
	if at, ok := o.doc.values.line(pointer); ok {
		return at, true
	}
	for _, f := range o.from {
		if at, ok := f.line(pointer); ok {
			return at, true
		}
	}
	return "", false
}

func (o offlineValues) anchor() string { return o.doc.values.anchor() }

func (o offlineValues) postRenderer(s postrender.Setter) (string, bool) { return o.doc.postRenderer(s) }

// withValuesFiles merges the values files, in order, under spec (the
// HelmRelease's spec.values), as helm-controller merges valuesFrom and
// then spec.values. It returns the merged values and the files, the last
// first.
func withValuesFiles(spec map[string]any, paths []string) (map[string]any, []fileValues, error) {
	merged := map[string]any{}
	var files []fileValues
	for _, p := range paths {
		fv, err := readValuesFile(p)
		if err != nil {
			return nil, nil, err
		}
		var vals map[string]any
		if err := fv.node.Decode(&vals); err != nil {
			return nil, nil, fmt.Errorf("values file %s: %w", p, err)
		}
		mergeValues(merged, vals)
		files = append([]fileValues{fv}, files...)
	}
	mergeValues(merged, spec)
	return merged, files, nil
}

// mergeValues merges src into dst: maps key by key, anything else
// replaced, as Helm merges values.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
			cp := map[string]any{}
			mergeValues(cp, sm)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}
