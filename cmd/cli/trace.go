package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/spf13/cobra"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// traceOptions are the flags of `reflux trace`.
type traceOptions struct {
	path          string
	kustomization string
	output        string
	vars          []string
	kubeconfig    string
	artifactHost  string
	chart         string
	helmRelease   string
	valuesFiles   []string
}

// NewTraceCommand returns `reflux trace`, which prints where each rendered
// field of an object was declared in the Kustomize overlay.
func NewTraceCommand() *cobra.Command {
	opts := &traceOptions{}
	cmd := &cobra.Command{
		Use:   "trace KIND/[NAMESPACE/]NAME [POINTER]",
		Short: "Show the file, line and column that declared a rendered field",
		Long: `trace renders a directory the way Flux's kustomize-controller does and
prints the origin of one field (a JSON pointer such as /spec/replicas), or
of every leaf field of the object. NAME is the rendered name; a generated
ConfigMap or Secret may be named without its hash suffix. Text output
says whether paths are relative to the current directory or to the
repository root (the enclosing git work tree). A refused field prints its
reason, why, and where to edit instead.

With --kustomization NAMESPACE/NAME the Kustomization, its source artifact
and its substituteFrom data are read from the cluster (--kubeconfig), and
the live value, the Git value and the open Drift record are printed too.

With --helmrelease, the object is one a Helm chart renders: each field is
traced to the values key that sets it (the chart rendered with Helm's
engine; a key counts only if changing it changes the field), the line of
the HelmRelease's spec.values that sets the key (or where to add a key
only the chart's defaults set), and the chart template that reads it.
Offline, --chart is the chart and --helmrelease FILE#NAME the HelmRelease;
with --helmrelease NAMESPACE/NAME the chart and values are those of the
release helm-controller made, and the lines those of the Kustomization
that applies the HelmRelease (its artifact, or --path). Both apply the
HelmRelease's spec.postRenderers to the render, as helm-controller does:
a field they set is traced to the line of the patch or image entry that
sets it.`,
		Example: `  reflux trace --path overlays/prod Deployment/prod/podinfo /spec/replicas
  reflux trace --path apps --kustomization clusters/prod/apps.yaml -o json Deployment/apps/web
  reflux trace --kustomization clusters/prod/infrastructure.yaml#infra-configs ConfigMap/cluster-settings
  reflux trace --kustomization flux-system/apps Deployment/podinfo/podinfo /spec/replicas
  # a field a Helm chart renders: the values key, its line, the template
  reflux trace --chart charts/web --helmrelease apps/web/release.yaml#web Deployment/web/web /spec/replicas
  reflux trace --helmrelease web/web Deployment/web/web`,
		Args:          cobra.RangeArgs(1, 2),
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd, opts, args)
		},
	}
	cmd.Flags().StringVar(&opts.path, "path", "", "directory to build (overrides the Kustomization's spec.path)")
	cmd.Flags().StringVar(&opts.kustomization, "kustomization", "",
		"the Flux Kustomization whose spec applies: a FILE (of several in it, the one whose spec.path is --path, or FILE#NAME, FILE#NAMESPACE/NAME), or NAMESPACE/NAME in the cluster")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig for --kustomization NAMESPACE/NAME (default $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&opts.artifactHost, "artifact-host", "",
		"HOST:PORT to fetch the source artifact from instead of its in-cluster URL, e.g. a port-forward of source-controller")
	cmd.Flags().StringVar(&opts.chart, "chart", "", "trace through this Helm chart (a folder or packaged .tgz), with --helmrelease FILE#NAME's values")
	cmd.Flags().StringVar(&opts.helmRelease, "helmrelease", "",
		"the Flux HelmRelease whose values the chart renders: FILE#NAME (with --chart), or NAMESPACE/NAME in the cluster (its release's chart and values)")
	cmd.Flags().StringArrayVar(&opts.valuesFiles, "values", nil,
		"with --chart: a values file the HelmRelease takes through spec.valuesFrom (repeatable, in its order; spec.values is merged over them)")
	cmd.Flags().StringArrayVar(&opts.vars, "var", nil,
		"KEY=VALUE for a postBuild.substituteFrom variable the cluster would supply (repeatable)")
	return cmd
}

func runTrace(cmd *cobra.Command, opts *traceOptions, args []string) error {
	if opts.output != "text" && opts.output != "json" {
		return fmt.Errorf("unknown output format %q", opts.output)
	}
	ref, err := parseObjectRef(args[0])
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.chart != "" || opts.helmRelease != "" {
		return runChartTrace(ctx, cmd, opts, ref, args[1:])
	}
	if ns, name, ok := liveRef(opts.kustomization); ok && opts.path == "" {
		return runLiveTrace(ctx, cmd, opts, ns, name, ref, args[1:])
	}
	build, err := traceBuildOptions(opts)
	if err != nil {
		return err
	}
	var idx *origin.Index
	err = onceWarnings(cmd.ErrOrStderr(), func() (err error) {
		idx, _, err = origin.Build(ctx, build)
		return err
	})
	if err != nil {
		return err
	}
	if ref, err = idx.Resolve(ref); err != nil {
		return err
	}
	return printTrace(cmd.OutOrStdout(), opts.output == "json", idx, ref, build.Root, args[1:])
}

// printTrace prints one pointer of ref, or every leaf when none is given.
// An empty root is an artifact fetched from the cluster: paths are then
// relative to the repository root.
func printTrace(out io.Writer, asJSON bool, idx *origin.Index, ref origin.ObjectRef, root string, pointer []string) error {
	fields, err := idx.Fields(ref)
	if err != nil {
		return err
	}
	if len(pointer) == 1 {
		if fields, err = oneField(idx, ref, fields, pointer[0]); err != nil {
			return err
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	paths := pathStyle{}
	if root != "" {
		paths = newPathStyle(root, cwd, filesOf(fields))
	}
	w := &traceWriter{out: out, json: asJSON, ref: ref, paths: paths}
	if !asJSON {
		if _, err := fmt.Fprintln(out, w.paths.header()); err != nil {
			return err
		}
	}
	for _, f := range fields {
		if err := w.field(f, len(pointer) == 1); err != nil {
			return err
		}
	}
	return w.legend()
}

// oneField returns the field at pointer, a leading "/" optional.
func oneField(idx *origin.Index, ref origin.ObjectRef, fields []origin.Field, pointer string) ([]origin.Field, error) {
	if !strings.HasPrefix(pointer, "/") {
		pointer = "/" + pointer
	}
	_, err := idx.Lookup(ref, pointer)
	var refused *origin.RefusedError
	if err != nil && !errors.As(err, &refused) {
		return nil, err
	}
	for _, f := range fields {
		if f.Pointer == pointer {
			return []origin.Field{f}, nil
		}
	}
	return nil, fmt.Errorf("%w: %s %s", origin.ErrFieldNotFound, ref, pointer)
}

// filesOf lists every file the fields name, origins, chains and edits.
func filesOf(fields []origin.Field) []string {
	var out []string
	for _, f := range fields {
		for _, l := range f.Origin.Chain {
			out = append(out, l.File)
		}
		if f.Edit != nil {
			out = append(out, f.Edit.File)
		}
	}
	return out
}

// parseObjectRef parses KIND[.GROUP]/[NAMESPACE/]NAME.
func parseObjectRef(s string) (origin.ObjectRef, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return origin.ObjectRef{}, fmt.Errorf("object %q is not KIND/[NAMESPACE/]NAME", s)
	}
	ref := origin.ObjectRef{Kind: parts[0], Name: parts[len(parts)-1]}
	if kind, group, ok := strings.Cut(parts[0], "."); ok {
		ref.Kind, ref.Group = kind, group
	}
	if len(parts) == 3 {
		ref.Namespace = parts[1]
	}
	if ref.Kind == "" || ref.Name == "" {
		return origin.ObjectRef{}, fmt.Errorf("object %q is not KIND/[NAMESPACE/]NAME", s)
	}
	return ref, nil
}

// traceBuildOptions roots the build at the git work tree enclosing the
// built directory (or the current directory) so origins print relative to it.
func traceBuildOptions(opts *traceOptions) (kustomize.BuildOptions, error) {
	// Remote bases, Helm charts and plugins are never fetched or run: the
	// local part is traced and their objects are refused by name.
	build := kustomize.BuildOptions{SkipUnbuildable: true}
	file, name, hasName := strings.Cut(opts.kustomization, "#")
	cwd, err := os.Getwd()
	if err != nil {
		return build, err
	}
	dir := cwd
	switch {
	case opts.path != "":
		if dir, err = filepath.Abs(opts.path); err != nil {
			return build, err
		}
	case file != "":
		// spec.path is relative to the source root: take the repository
		// that holds the Kustomization file.
		if dir, err = filepath.Abs(filepath.Dir(file)); err != nil {
			return build, err
		}
	default:
		return build, errors.New("--path or --kustomization is required")
	}
	root := gitRoot(dir)
	if root == "" {
		root = cwd
	}
	if rel, err := filepath.Rel(root, dir); err != nil || strings.HasPrefix(rel, "..") {
		root = dir // outside cwd and any git tree: the directory is the root
	}
	build.Root = root
	if opts.path != "" {
		rel, _ := filepath.Rel(root, dir)
		build.Path = rel
	}
	if file != "" {
		ks, err := loadTraceKustomization(file, name, hasName, build.Path)
		if err != nil {
			return build, err
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return build, err
		}
		build.Kustomization, build.KustomizationFile = ks, abs
	}
	if len(opts.vars) > 0 {
		// The cluster's ConfigMaps and Secrets are out of reach: --var
		// stands in for them, with the lowest precedence, like substituteFrom.
		src := kustomize.SubstituteSource{Kind: "Flag", Name: "--var", Data: map[string]string{}}
		for _, kv := range opts.vars {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return build, fmt.Errorf("--var %q is not KEY=VALUE", kv)
			}
			src.Data[k] = v
		}
		build.SubstituteFrom = []kustomize.SubstituteSource{src}
	}
	return build, nil
}

// loadTraceKustomization reads the Flux Kustomization of --kustomization
// FILE[#NAME]. Without a name, a file holding several is narrowed by
// --path (dir, relative to the root), matched against each spec.path.
func loadTraceKustomization(file, name string, hasName bool, dir string) (*kustomizev1.Kustomization, error) {
	switch {
	case hasName:
		return kustomize.SelectKustomization(file, name)
	case dir != "":
		return kustomize.SelectKustomizationForPath(file, filepath.ToSlash(dir))
	}
	return kustomize.LoadKustomization(file)
}

// gitRoot returns the nearest directory at or above dir holding .git.
func gitRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
