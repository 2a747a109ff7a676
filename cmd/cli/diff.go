package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/source"
)

// ErrDrift is returned by `reflux diff` when it found drift, so that the
// process exits 1 as `flux diff` does and CI can gate on it.
var ErrDrift = errors.New("drift found")

// diffOptions are the flags of `reflux diff kustomization`.
type diffOptions struct {
	path            string
	output          string
	kubeconfig      string
	artifactHost    string
	comparison      string
	allowedManagers []string
	fluxVersion     string
}

// NewDiffCommand returns `reflux diff`, which compares the live cluster
// with a Kustomization's revision using reflux's drift detection.
func NewDiffCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what drifted live from Git, with each field's origin and rule",
	}
	cmd.AddCommand(newDiffKustomizationCommand(), newDiffHelmReleaseCommand())
	return cmd
}

func newDiffKustomizationCommand() *cobra.Command {
	opts := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "kustomization NAMESPACE/NAME",
		Short: "Compare the live objects of a Flux Kustomization with its source revision",
		Long: `diff kustomization builds the Kustomization's source artifact as
kustomize-controller does (or, with --path, a local checkout), and compares
every object it renders with the live one using reflux's drift detection:
a server-side dry-run apply as Flux's field manager (or, with
--comparison=in-process, the apiserver's merge code without patch rights).
Each drifted field is printed with its live and Git values, the file, line
and column that declared it, and the ReverseSyncPolicy rule that would
classify it.

It exits 1 when anything drifted, as flux diff does, so CI can gate on it;
a failure to compare is an error, also exit 1, printed on stderr.`,
		Example: `  reflux diff kustomization flux-system/apps
  reflux diff kustomization flux-system/apps -o json | jq 'select(.fields[].action=="Alert")'
  # what would pushing my checkout revert?
  reflux diff kustomization flux-system/apps --path .`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd, opts, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.path, "path", "", "compare this local checkout (the repository root spec.path is relative to) instead of the source's artifact")
	fs.StringVarP(&opts.output, "output", "o", "text", "output format: text, or json (one object per line)")
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&opts.artifactHost, "artifact-host", "",
		"HOST:PORT to fetch the source artifact from instead of its in-cluster URL, e.g. a port-forward of source-controller")
	fs.StringVar(&opts.comparison, "comparison", string(drift.ComparisonDryRun),
		"'dry-run' (a server-side dry-run apply, needs patch on the objects) or 'in-process' (read rights only)")
	fs.StringSliceVar(&opts.allowedManagers, "allowed-field-managers", nil,
		"field managers whose writes are never drift, besides the control plane's and an autoscaler's, as reflux manager's flag")
	fs.StringVar(&opts.fluxVersion, "kustomize-controller-version", kustomize.PairedFluxVersion,
		"the version of the kustomize-controller that applies the Kustomization (for buildMetadata: [managedByLabel])")
	return cmd
}

func runDiff(cmd *cobra.Command, opts *diffOptions, ref string) error {
	if opts.output != "text" && opts.output != "json" {
		return fmt.Errorf("unknown output format %q", opts.output)
	}
	comparison, err := drift.ParseComparison(opts.comparison)
	if err != nil {
		return err
	}
	ns, name, ok := liveRef(ref)
	if !ok {
		return fmt.Errorf("want NAMESPACE/NAME of a Kustomization in the cluster, got %q", ref)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c, cfg, err := clusterClientConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ks); err != nil {
		return fmt.Errorf("getting Kustomization %s/%s: %w", ns, name, err)
	}
	dopts := []drift.Option{drift.WithAllowedManagers(append(drift.DefaultAllowedManagers(), opts.allowedManagers...)...)}
	if comparison == drift.ComparisonInProcess {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return fmt.Errorf("creating discovery client: %w", err)
		}
		dopts = append(dopts, drift.WithInProcessComparison(drift.NewOpenAPITypes(dc.OpenAPIV3())))
	}
	det, err := drift.New(c, dopts...)
	if err != nil {
		return fmt.Errorf("creating drift detector: %w", err)
	}
	report, err := diffKustomization(ctx, cmd, c, det, ks, opts)
	if err != nil {
		return err
	}
	if err := printDiff(cmd.OutOrStdout(), opts.output == "json", report); err != nil {
		return err
	}
	if objects, fields := report.drifted(); objects > 0 {
		return fmt.Errorf("%w: %d field(s) in %d object(s) of Kustomization %s", ErrDrift, fields, objects, report.Kustomization)
	}
	return nil
}

// diffKustomization renders ks's revision (or the local checkout) and
// compares each rendered object with the live one.
func diffKustomization(ctx context.Context, cmd ioCmd, c client.Client, det *drift.Detector, ks *kustomizev1.Kustomization,
	opts *diffOptions) (diffReport, error) {
	report := diffReport{Kustomization: ks.Namespace + "/" + ks.Name, Applied: ks.Status.LastAppliedRevision}
	if report.Applied == "" {
		report.Applied = "none yet"
	}
	root, revision, subst, cleanup, err := diffTree(ctx, c, ks, opts)
	if err != nil {
		return report, err
	}
	defer cleanup()
	report.Revision = revision
	var render *desired.Render
	if err := onceWarnings(cmd.ErrOrStderr(), func() (err error) {
		// Knowing the file that declares the Kustomization, the index
		// points fields its spec sets at their line.
		build := kustomize.BuildOptions{Root: root, Kustomization: ks, SubstituteFrom: subst,
			KustomizationFile: declaringFile(root, ks), ManagedByVersion: opts.fluxVersion}
		render, err = desired.Build(ctx, build, revision)
		return err
	}); err != nil {
		return report, err
	}
	if render.IndexErr != nil {
		// Drift is still reported; only origins are missing.
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: fields will have no origin: %v\n", render.IndexErr)
	}
	idx := render.Index
	classifier, err := diffClassifier(ctx, c, ks, &report)
	if err != nil {
		return report, err
	}
	report.Encrypted = len(render.Encrypted)
	for _, built := range render.Built.Objects {
		key := desired.KeyOf(built)
		want, ok := render.Object(key)
		if !ok {
			continue // SOPS-encrypted, counted above
		}
		report.Compared++
		od, err := diffObject(ctx, c, det, ks, want, idx, classifier, revision)
		if err != nil {
			return report, err
		}
		if len(od.Fields) > 0 {
			report.Objects = append(report.Objects, od)
		}
	}
	return report, nil
}

// diffTree is the tree to compare: the local checkout, or the source's
// artifact fetched into a temporary directory that cleanup removes.
func diffTree(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, opts *diffOptions) (
	root, revision string, subst []kustomize.SubstituteSource, cleanup func(), err error) {
	cleanup = func() {}
	if opts.path != "" {
		if root, err = filepath.Abs(opts.path); err != nil {
			return "", "", nil, cleanup, err
		}
		subst, err = source.SubstituteFrom(ctx, c, ks)
		return root, "local checkout " + opts.path, subst, cleanup, err
	}
	src, err := source.Resolve(ctx, c, ks)
	if err != nil {
		return "", "", nil, cleanup, err
	}
	dir, err := os.MkdirTemp("", "reflux-diff-")
	if err != nil {
		return "", "", nil, cleanup, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	artifactURL, err := rewriteHost(src.Artifact.URL, opts.artifactHost)
	if err != nil {
		return "", "", nil, cleanup, err
	}
	if err := desired.NewFetcher(3, 256<<20, 1<<30).FetchWithContext(ctx, artifactURL, src.Artifact.Digest, dir); err != nil {
		return "", "", nil, cleanup, fmt.Errorf("fetching artifact %s: %w", artifactURL, err)
	}
	return dir, "artifact " + src.Artifact.Revision, src.SubstituteFrom, cleanup, nil
}

// diffClassifier is the governing policy's classifier, or the default
// rules' when no policy governs the Kustomization.
func diffClassifier(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, report *diffReport) (*classify.Classifier, error) {
	classifier, name, err := policyClassifier(ctx, c, ks)
	report.Policy = name
	return classifier, err
}

// policyClassifier is the classifier of the policy governing ks and its
// name, or the default rules' and "" when none governs it.
func policyClassifier(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization) (*classify.Classifier, string, error) {
	spec, name := &refluxv1.ReverseSyncPolicySpec{}, ""
	if governing, err := policy.Governing(ctx, c, ks); err != nil {
		return nil, "", fmt.Errorf("finding the ReverseSyncPolicy of %s/%s: %w", ks.Namespace, ks.Name, err)
	} else if governing != nil {
		spec, name = &governing.Spec, governing.Name
	}
	classifier, err := classify.New(spec)
	if err != nil {
		return nil, name, fmt.Errorf("ReverseSyncPolicy %s: %w", name, err)
	}
	return classifier, name, nil
}

// staleRetries bounds how often one object is read again when it changed
// between the read and the dry run.
const staleRetries = 3

// diffObject compares one rendered object with the live one.
func diffObject(ctx context.Context, c client.Client, det *drift.Detector, ks *kustomizev1.Kustomization,
	want *unstructured.Unstructured, idx *origin.Index, classifier *classify.Classifier, revision string) (objectDiff, error) {
	od := objectDiff{Kustomization: ks.Namespace + "/" + ks.Name, Object: desired.KeyOf(want).String(), APIVersion: want.GetAPIVersion()}
	for attempt := 1; ; attempt++ {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(want.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKey{Namespace: want.GetNamespace(), Name: want.GetName()}, live)
		if apierrors.IsNotFound(err) {
			f := refluxv1.DriftField{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeRemove, FluxReverts: true,
				Origin: observe.Origin(idx, origin.RefOf(want), "/metadata/name")}
			fields := []refluxv1.DriftField{f}
			observe.Classify(classifier, want.GetKind(), "", fields, false)
			od.Fields = fieldsOf(fields)
			return od, nil
		}
		if err != nil {
			return od, fmt.Errorf("getting live %s: %w", od.Object, err)
		}
		res, err := det.Detect(ctx, drift.Input{Desired: want, Live: live, IgnorePaths: observe.IgnorePaths(ks, want), Force: ks.Spec.Force})
		if errors.Is(err, drift.ErrStale) && attempt < staleRetries {
			continue
		}
		if err != nil {
			return od, fmt.Errorf("comparing %s: %w", od.Object, err)
		}
		if res.Skipped != "" {
			return od, nil // Flux does not apply it at all
		}
		obs := observe.Observe(observe.Input{
			Kustomization: refluxv1.KustomizationRef{Namespace: ks.Namespace, Name: ks.Name}, Revision: revision,
			Live: live, Desired: want, Result: res, Index: idx, Classifier: classifier, Now: time.Now(),
		})
		od.Fields = fieldsOf(obs.Observation.Fields)
		od.Excluded = string(res.LiveExcluded)
		return od, nil
	}
}
