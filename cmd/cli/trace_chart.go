package cli

import (
	"bytes"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/release"
)

// chartField is one rendered field of a chart's object, traced to the
// values key that sets it and the key's line.
type chartField struct {
	Pointer string `json:"pointer"`
	Value   string `json:"value"`
	traced
}

// runChartTrace traces fields of an object a chart renders for a
// HelmRelease: offline, from the chart (--chart) and the HelmRelease's
// file (--helmrelease FILE#NAME); or live (--helmrelease NAMESPACE/NAME),
// from the release helm-controller made, with the values lines in the
// tree of the Kustomization that applies the HelmRelease.
func runChartTrace(ctx context.Context, cmd ioCmd, opts *traceOptions, ref origin.ObjectRef, pointer []string) error {
	var (
		ch     *chartv2.Chart
		values map[string]any
		rel    chart.Release
		lines  valuesLines
		err    error
	)
	if ns, name, ok := liveRef(opts.helmRelease); ok {
		if ch, values, rel, lines, err = liveChart(ctx, cmd, opts, ns, name); err != nil {
			return err
		}
	} else {
		if opts.chart == "" {
			return errors.New("--helmrelease FILE#NAME needs --chart, the chart's folder or packaged .tgz")
		}
		if ch, err = chart.Load(opts.chart); err != nil {
			return err
		}
		var fv fileValues
		if fv, rel, err = helmReleaseFile(opts.helmRelease); err != nil {
			return err
		}
		var files []fileValues
		if values, files, err = withValuesFiles(fv.values, opts.valuesFiles); err != nil {
			return err
		}
		lines = offlineValues{spec: fv, from: files}
	}
	a, err := chart.Analyze(ch, values, rel)
	if err != nil {
		return err
	}
	key, err := renderedKey(a.Keys(), rel, ref)
	if err != nil {
		return err
	}
	var results []chart.Result
	if len(pointer) == 1 {
		res, err := a.Find(key, normalizePointer(pointer[0]))
		if err != nil {
			return err
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
			return fmt.Errorf("encoding %s: %w", res.Pointer, err)
		}
		fields = append(fields, chartField{Pointer: res.Pointer, Value: string(v), traced: traceResult(res, lines)})
	}
	return printChartTrace(cmd.OutOrStdout(), opts.output == "json", key, fields)
}

// liveChart reads the chart and values of the release helm-controller
// last made for the HelmRelease ns/name, and its values lines in Git.
func liveChart(ctx context.Context, cmd ioCmd, opts *traceOptions, ns, name string) (
	*chartv2.Chart, map[string]any, chart.Release, valuesLines, error) {
	c, _, err := clusterClientConfig(opts.kubeconfig)
	if err != nil {
		return nil, nil, chart.Release{}, nil, err
	}
	hr := &helmv2.HelmRelease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hr); err != nil {
		return nil, nil, chart.Release{}, nil, fmt.Errorf("getting HelmRelease %s/%s: %w", ns, name, err)
	}
	latest, err := release.Latest(hr)
	if err != nil {
		return nil, nil, chart.Release{}, nil, err
	}
	rls, err := release.Load(ctx, c, latest)
	if err != nil {
		return nil, nil, chart.Release{}, nil, fmt.Errorf("reading release %s: %w", latest, err)
	}
	rel := chart.Release{Name: rls.Name, Namespace: rls.Namespace, Revision: rls.Version, IsUpgrade: rls.Version > 1,
		ClusterScoped: chart.ClusterScopedBy(c.RESTMapper())}
	lines, err := helmReleaseInGit(ctx, cmd, c, hr, &diffOptions{path: opts.path, artifactHost: opts.artifactHost})
	if err != nil {
		warn(cmd, "values lines will be missing: %v", err)
		return rls.Chart, rls.Config, rel, nil, nil
	}
	return rls.Chart, rls.Config, rel, lines, nil
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

// helmReleaseFile reads the HelmRelease FILE#NAME (or FILE, when it holds
// one HelmRelease): its values with their positions, and the release it
// names, as helm-controller names it.
func helmReleaseFile(ref string) (fileValues, chart.Release, error) {
	file, name, hasName := strings.Cut(ref, "#")
	if file == "" {
		return fileValues{}, chart.Release{}, errors.New("--chart needs --helmrelease FILE#NAME, the HelmRelease whose values to trace")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fileValues{}, chart.Release{}, err
	}
	var matches []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		doc := &yaml.Node{}
		if err := dec.Decode(doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fileValues{}, chart.Release{}, fmt.Errorf("parsing %s: %w", file, err)
		}
		root := doc
		if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
		if kind := chart.Child(root, "kind"); kind == nil || kind.Value != helmv2.HelmReleaseKind {
			continue
		}
		meta := chart.Child(root, "metadata")
		if n := childOf(meta, "name"); hasName && (n == nil || n.Value != name) {
			continue
		}
		matches = append(matches, root)
	}
	switch {
	case len(matches) == 0:
		return fileValues{}, chart.Release{}, fmt.Errorf("%s has no HelmRelease %q", file, name)
	case len(matches) > 1:
		return fileValues{}, chart.Release{}, fmt.Errorf("%s has %d HelmReleases: name one with %s#NAME", file, len(matches), file)
	}
	// Through JSON, as the API's types are tagged for it.
	var obj map[string]any
	if err := matches[0].Decode(&obj); err != nil {
		return fileValues{}, chart.Release{}, fmt.Errorf("decoding the HelmRelease of %s: %w", file, err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return fileValues{}, chart.Release{}, fmt.Errorf("decoding the HelmRelease of %s: %w", file, err)
	}
	hr := &helmv2.HelmRelease{}
	if err := json.Unmarshal(raw, hr); err != nil {
		return fileValues{}, chart.Release{}, fmt.Errorf("decoding the HelmRelease of %s: %w", file, err)
	}
	out := fileValues{file: file, values: map[string]any{}, spec: chart.Child(matches[0], "spec")}
	if out.spec != nil {
		out.node = chart.Child(out.spec, "values")
	}
	if hr.Spec.Values != nil {
		if err := json.Unmarshal(hr.Spec.Values.Raw, &out.values); err != nil {
			return fileValues{}, chart.Release{}, fmt.Errorf("spec.values of %s#%s: %w", file, hr.Name, err)
		}
	}
	// helm-controller's names: GetReleaseName and GetReleaseNamespace.
	return out, chart.Release{Name: hr.GetReleaseName(), Namespace: hr.GetReleaseNamespace(), Revision: 1}, nil
}

func childOf(n *yaml.Node, tok string) *yaml.Node {
	if n == nil {
		return nil
	}
	return chart.Child(n, tok)
}

// printChartTrace prints the traced fields, ordered by pointer.
func printChartTrace(w io.Writer, asJSON bool, key chart.ObjectKey, fields []chartField) error {
	sort.Slice(fields, func(i, j int) bool { return fields[i].Pointer < fields[j].Pointer })
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Object string       `json:"object"`
			Fields []chartField `json:"fields"`
		}{key.String(), fields})
	}
	fmt.Fprintf(w, "# %s, as the chart renders it\n", key)
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
	spec fileValues
	// from are the values files, the last given first (its keys win).
	from []fileValues
}

func (o offlineValues) line(pointer string) (string, bool) {
	if at, ok := o.spec.line(pointer); ok {
		return at, true
	}
	for _, f := range o.from {
		if at, ok := f.line(pointer); ok {
			return at, true
		}
	}
	return "", false
}

func (o offlineValues) anchor() string { return o.spec.anchor() }

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
