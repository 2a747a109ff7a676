package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/spf13/cobra"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/release"
)

func newDiffHelmReleaseCommand() *cobra.Command {
	opts := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "helmrelease NAMESPACE/NAME",
		Short: "Compare the live objects of a Flux HelmRelease with the release helm-controller made",
		Long: `diff helmrelease reads the Helm release helm-controller last installed
or upgraded for the HelmRelease, from Helm's own storage, and compares each
of its objects with the live one as helm-controller's drift detection does:
a server-side dry-run apply as helm-controller, with the HelmRelease's
ignore rules.

Each drifted field is printed with its live and chart-rendered values,
the values key that sets it (found by rendering the chart with Helm's
engine: a key counts only if changing it changes the field), the line in
Git that sets that key (spec.values of the HelmRelease, in the tree of the
Flux Kustomization that applies it), the chart template that reads it, and
when helm-controller takes the live value back.

It exits 1 when anything drifted, as flux diff does; a failure to compare
is an error, also exit 1, printed on stderr.`,
		Example: `  reflux diff helmrelease apps/podinfo
  reflux diff helmrelease apps/podinfo -o json | jq 'select(.fields[].kind=="chart-default")'
  # the HelmRelease's values line in a local checkout
  reflux diff helmrelease apps/podinfo --path .`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiffHelmRelease(cmd, opts, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.path, "path", "", "find values lines in this local checkout of the Kustomization that applies the HelmRelease, instead of its source's artifact")
	fs.StringVarP(&opts.output, "output", "o", "text", "output format: text, or json (one object per line)")
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&opts.artifactHost, "artifact-host", "",
		"HOST:PORT to fetch the Kustomization's source artifact from instead of its in-cluster URL, e.g. a port-forward of source-controller")
	fs.StringVar(&opts.fluxVersion, "kustomize-controller-version", kustomize.PairedFluxVersion,
		"the version of the kustomize-controller that applies the HelmRelease's Kustomization (for buildMetadata: [managedByLabel])")
	return cmd
}

func runDiffHelmRelease(cmd *cobra.Command, opts *diffOptions, ref string) error {
	if opts.output != "text" && opts.output != "json" {
		return fmt.Errorf("unknown output format %q", opts.output)
	}
	ns, name, ok := liveRef(ref)
	if !ok {
		return fmt.Errorf("want NAMESPACE/NAME of a HelmRelease in the cluster, got %q", ref)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c, _, err := clusterClientConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	hr := &helmv2.HelmRelease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hr); err != nil {
		return fmt.Errorf("getting HelmRelease %s/%s: %w", ns, name, err)
	}
	report, err := diffHelmRelease(ctx, cmd, c, hr, opts)
	if err != nil {
		return err
	}
	if err := printHelmDiff(cmd.OutOrStdout(), opts.output == "json", report); err != nil {
		return err
	}
	if objects, fields := report.drifted(); objects > 0 {
		return fmt.Errorf("%w: %d field(s) in %d object(s) of HelmRelease %s", ErrDrift, fields, objects, report.HelmRelease)
	}
	return nil
}

// diffHelmRelease compares each object of hr's latest release with the
// live one, and traces every drifted field to its values key and line.
// What cannot be traced (the chart fails to render offline, the
// Kustomization's tree cannot be built) is a warning: the drift is still
// reported, without those origins.
func diffHelmRelease(ctx context.Context, cmd ioCmd, c client.Client, hr *helmv2.HelmRelease, opts *diffOptions) (helmDiffReport, error) {
	report := helmDiffReport{HelmRelease: hr.Namespace + "/" + hr.Name, Mode: string(hr.GetDriftDetection().GetMode())}
	ref, err := release.Latest(hr)
	if err != nil {
		return report, err
	}
	rls, err := release.Load(ctx, c, ref)
	if err != nil {
		return report, fmt.Errorf("reading release %s: %w", ref, err)
	}
	report.Release = ref.String()
	if rls.Chart != nil && rls.Chart.Metadata != nil {
		report.Chart = rls.Chart.Metadata.Name + " " + rls.Chart.Metadata.Version
	}
	objects, err := release.Desired(rls, c)
	if err != nil {
		return report, fmt.Errorf("release %s: %w", ref, err)
	}
	det, err := release.New(c)
	if err != nil {
		return report, err
	}
	found, err := det.DetectAll(ctx, hr, objects)
	if err != nil {
		// Like helm-controller, go on past objects that cannot be diffed.
		warn(cmd, "some objects were not compared: %v", err)
	}
	report.Compared = len(found.Objects)
	tracer := newHelmTracer(ctx, cmd, c, hr, rls.Chart, rls.Config, chart.Release{Name: rls.Name, Namespace: rls.Namespace,
		Revision: rls.Version, IsUpgrade: rls.Version > 1, ClusterScoped: chart.ClusterScopedBy(c.RESTMapper())}, opts)
	classifier := helmClassifier(ctx, cmd, c, hr)
	for _, o := range found.Objects {
		if len(o.Fields) == 0 && !o.Missing {
			continue
		}
		od := helmObjectDiff{HelmRelease: report.HelmRelease, Object: desired.KeyOf(o.Desired).String(),
			APIVersion: o.Desired.GetAPIVersion(), RevertedAt: string(o.RevertedAt), Excluded: string(o.Excluded)}
		if od.Excluded == string(release.NotExcluded) {
			od.Excluded = ""
		}
		for _, f := range o.Fields {
			od.Fields = append(od.Fields, tracer.field(o.Desired, f))
		}
		if o.Missing {
			// Deleted live: helm-controller reports it removed, and its
			// correction or the next upgrade creates it again.
			od.Fields = append(od.Fields, tracer.missing(o.Desired, o.RevertedAt == release.AtReconcile))
		}
		for i := range od.Fields {
			classifyHelmField(classifier, o.Desired.GetKind(), tracer.ownerFile, &od.Fields[i])
		}
		report.Objects = append(report.Objects, od)
	}
	return report, nil
}

// helmTracer takes a rendered field to its values key, and the key to
// its line.
type helmTracer struct {
	analysis *chart.Analysis
	// lines finds the keys' lines; nil when they are not known.
	lines valuesLines
	// ownerFile declares the HelmRelease; a rule's paths match it.
	ownerFile string
	// renderers are the HelmRelease's post-renderers: the release holds
	// what they made of the chart's render.
	renderers []helmv2.PostRenderer
}

func newHelmTracer(ctx context.Context, cmd ioCmd, c client.Client, hr *helmv2.HelmRelease, ch *chartv2.Chart, values map[string]any,
	rel chart.Release, opts *diffOptions) *helmTracer {
	t := &helmTracer{renderers: hr.Spec.PostRenderers}
	if a, err := chart.Analyze(ch, values, rel); err != nil {
		warn(cmd, "values keys will be missing: rendering the release's chart: %v", err)
	} else {
		t.analysis = a
	}
	lines, err := helmReleaseInGit(ctx, cmd, c, hr, opts)
	if err != nil {
		warn(cmd, "values lines will be missing: %v", err)
		return t
	}
	t.lines, t.ownerFile = lines, observe.DeclaringFile(lines.idx, lines.hr)
	return t
}

// field traces one drifted field of obj, the release's object. A field
// the HelmRelease's post-renderers set in the release, rather than the
// chart, traces to the post-renderer's line, as helmlive's origins do.
func (t *helmTracer) field(obj *unstructured.Unstructured, f release.Field) helmDiffField {
	out := helmDiffField{Pointer: f.Pointer, Change: string(f.ChangeType), Live: f.LiveValue, Chart: f.GitValue, HelmReverts: f.FluxReverts}
	if t.analysis == nil {
		return out
	}
	ptr := f.GitPointer
	if strings.Contains(ptr, "/-") {
		ptr = f.Pointer // an element only live has: the chart renders none
	}
	res, err := t.analysis.Find(chartKeyOf(obj), ptr)
	var tr traced
	switch {
	case len(t.renderers) > 0 && f.GitValue != "" && postRendererChanged(res, err == nil, f.GitValue):
		var rendered *chart.Result
		if err == nil {
			rendered = &res
		}
		tr = tracePostRendered(t.renderers, obj, ptr, rendered, t.lines)
	case err != nil:
		out.Kind = "unknown"
		out.Refused = err.Error()
		return out
	default:
		tr = traceResult(res, t.lines)
	}
	out.Kind, out.Keys, out.Template = tr.Kind, tr.Keys, tr.Template
	out.Origin, out.Refused, out.EditAt = tr.Origin, tr.Refused, tr.EditAt
	return out
}

// missing is the field of an object deleted live: the whole object, at
// the template that renders it.
func (t *helmTracer) missing(obj *unstructured.Unstructured, reverts bool) helmDiffField {
	out := helmDiffField{Pointer: refluxv1.WholeObjectPointer, Change: string(refluxv1.ChangeRemove), HelmReverts: reverts}
	if t.analysis == nil {
		return out
	}
	if res, err := t.analysis.Find(chartKeyOf(obj), "/metadata/name"); err == nil && res.Template.Line > 0 {
		out.Template = fmt.Sprintf("%s:%d", res.Template.File, res.Template.Line)
	}
	return out
}

// helmReleaseInGit builds the tree of the Flux Kustomization that applied
// hr (its kustomize.toolkit.fluxcd.io labels name it) and returns where
// that tree sets hr's values: spec.values in its origin index, and the
// files of the ConfigMaps and Secrets of spec.valuesFrom it generates.
func helmReleaseInGit(ctx context.Context, cmd ioCmd, c client.Client, hr *helmv2.HelmRelease, opts *diffOptions) (gitValues, error) {
	labels := hr.GetLabels()
	ksName, ksNamespace := labels["kustomize.toolkit.fluxcd.io/name"], labels["kustomize.toolkit.fluxcd.io/namespace"]
	if ksName == "" || ksNamespace == "" {
		return gitValues{}, errors.New("no Flux Kustomization applied the HelmRelease (it has no kustomize.toolkit.fluxcd.io labels)")
	}
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ksNamespace, Name: ksName}, ks); err != nil {
		return gitValues{}, fmt.Errorf("getting Kustomization %s/%s, which applied the HelmRelease: %w", ksNamespace, ksName, err)
	}
	root, revision, subst, cleanup, err := diffTree(ctx, c, ks, opts)
	if err != nil {
		return gitValues{}, err
	}
	defer cleanup()
	var render *desired.Render
	if err := onceWarnings(cmd.ErrOrStderr(), func() (err error) {
		build := kustomize.BuildOptions{Root: root, Kustomization: ks, SubstituteFrom: subst,
			KustomizationFile: declaringFile(root, ks), ManagedByVersion: opts.fluxVersion}
		render, err = desired.Build(ctx, build, revision)
		return err
	}); err != nil {
		return gitValues{}, fmt.Errorf("building Kustomization %s/%s: %w", ksNamespace, ksName, err)
	}
	if render.IndexErr != nil {
		return gitValues{}, fmt.Errorf("indexing Kustomization %s/%s: %w", ksNamespace, ksName, render.IndexErr)
	}
	key := desired.ObjectKey{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind, Namespace: hr.Namespace, Name: hr.Name}
	want, ok := render.Object(key)
	if !ok {
		return gitValues{}, fmt.Errorf("Kustomization %s/%s does not render HelmRelease %s/%s at %s", ksNamespace, ksName, hr.Namespace, hr.Name, revision)
	}
	out := gitValues{idx: render.Index, hr: origin.RefOf(want)}
	// helm-controller merges valuesFrom in order, then spec.values over
	// them: the last source that sets a key is the one to point at.
	find := func(kind, namespace, name string) (*unstructured.Unstructured, bool) {
		return render.Object(desired.ObjectKey{Kind: kind, Namespace: namespace, Name: name})
	}
	for _, vf := range observe.ValuesFromFiles(want, render.Index, find) {
		if vf.Err != nil {
			warn(cmd, "values keys it may set have no line: %v", vf.Err)
			continue
		}
		out.from = append(out.from, fileValues{file: vf.File, node: vf.Node})
	}
	return out, nil
}

// chartKeyOf is obj's key among the chart's rendered objects.
func chartKeyOf(obj *unstructured.Unstructured) chart.ObjectKey {
	return chart.ObjectKey{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// warn prints a warning on stderr: what the diff goes on without.
func warn(cmd ioCmd, format string, args ...any) {
	fmt.Fprintf(cmd.ErrOrStderr(), "warning: "+format+"\n", args...)
}

// helmClassifier is the classifier of the policy that governs the
// Kustomization applying hr, or the default rules' (with a warning) when
// that Kustomization cannot be read: the classification is what a record
// of the field would carry.
func helmClassifier(ctx context.Context, cmd ioCmd, c client.Client, hr *helmv2.HelmRelease) *classify.Classifier {
	labels := hr.GetLabels()
	ks := &kustomizev1.Kustomization{}
	err := errors.New("no Flux Kustomization applied the HelmRelease (it has no kustomize.toolkit.fluxcd.io labels)")
	if name, ns := labels["kustomize.toolkit.fluxcd.io/name"], labels["kustomize.toolkit.fluxcd.io/namespace"]; name != "" && ns != "" {
		err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ks)
	}
	if err == nil {
		var classifier *classify.Classifier
		if classifier, _, err = policyClassifier(ctx, c, ks); err == nil {
			return classifier
		}
	}
	warn(cmd, "classified by the default rules: %v", err)
	classifier, err := classify.New(&refluxv1.ReverseSyncPolicySpec{})
	if err != nil {
		panic(err) // the empty policy always compiles
	}
	return classifier
}

// classifyHelmField sets f's rule, action and severity as the engine
// classifies a record's field (observe.Classify): from the rendered
// object's kind, the field, both values, the file of its values line and
// the HelmRelease's file.
func classifyHelmField(c *classify.Classifier, kind, ownerFile string, f *helmDiffField) {
	file, _, _ := strings.Cut(f.Origin, ":")
	fields := []refluxv1.DriftField{{Pointer: f.Pointer, ChangeType: refluxv1.ChangeType(f.Change),
		GitValue: f.Chart, LiveValue: f.Live, Origin: &refluxv1.FieldOrigin{File: file}}}
	observe.Classify(c, kind, ownerFile, fields, false)
	f.Rule, f.Action, f.Severity = fields[0].Rule, string(fields[0].Action), string(fields[0].Severity)
}
