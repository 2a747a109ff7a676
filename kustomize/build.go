package kustomize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	securejoin "github.com/cyphar/filepath-securejoin"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	generator "github.com/fluxcd/pkg/kustomize"
	"github.com/fluxcd/pkg/ssa/normalize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resmap"
)

// ErrPathNotFound is returned when the directory to build does not exist.
var ErrPathNotFound = errors.New("kustomization path not found")

// Result is the outcome of a Build.
type Result struct {
	// Objects are the rendered objects, in the order kustomize-controller
	// reads them from the build output, with spec.commonMetadata applied.
	Objects []*unstructured.Unstructured
	// Root is the absolute root of the source tree that was built.
	Root string
	// Path is the built directory, relative to Root, slash separated.
	Path string
	// GeneratedResources is set when Path had no kustomization file: it
	// lists the resources, relative to Path, of the kustomization.yaml that
	// Flux's generator wrote.
	GeneratedResources []string
	// Generated reports whether Path had no kustomization file.
	Generated bool
}

// Build renders opts.Path the way kustomize-controller's build step does:
// generate, SecureBuild, substitute, then commonMetadata (applied by the
// controller right before server-side apply). It runs on a temporary copy
// of opts.Root (hard links, see linkTree) so the caller's files are never
// written.
//
// SOPS decryption (spec.decryption) needs keys from the cluster and is not
// performed: encrypted resources come back as stored in Git, and the origin
// index refuses their fields.
func Build(ctx context.Context, opts BuildOptions) (*Result, error) {
	root, rel, err := resolvePaths(opts)
	if err != nil {
		return nil, err
	}
	maxFile, maxLoad := sizeLimits(opts)
	if err := checkTree(root, rel, maxFile); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "reflux-build-")
	if err != nil {
		return nil, fmt.Errorf("creating build dir: %w", err)
	}
	defer os.RemoveAll(work)
	if err := linkTree(root, work); err != nil {
		return nil, fmt.Errorf("copying source tree: %w", err)
	}
	dirPath, err := securejoin.SecureJoin(work, rel)
	if err != nil {
		return nil, fmt.Errorf("joining path %q: %w", rel, err)
	}
	if _, err := os.Stat(dirPath); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPathNotFound, rel, err)
	}
	found, err := dropUnbuildable(work, opts.SkipUnbuildable)
	if err != nil {
		return nil, err
	}
	if !opts.SkipUnbuildable && !opts.AllowRemoteBases {
		if err := refuseRemote(found); err != nil {
			return nil, err
		}
	}
	u, err := toUnstructured(opts.Kustomization)
	if err != nil {
		return nil, err
	}
	res := &Result{Root: root, Path: filepath.ToSlash(rel)}
	if err := generate(u, work, dirPath, res); err != nil {
		return nil, err
	}
	m, err := secureBuild(work, dirPath, opts.AllowRemoteBases, maxFile, maxLoad)
	if err != nil {
		return nil, err
	}
	if err := postBuild(ctx, opts, u, m); err != nil {
		return nil, err
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %w", err)
	}
	if res.Objects, err = ssautil.ReadObjects(bytes.NewReader(out)); err != nil {
		return nil, fmt.Errorf("reading build output: %w", err)
	}
	flux := opts.ManagedByVersion
	if flux == "" {
		flux = PairedFluxVersion
	}
	restampManagedBy(res.Objects, flux)
	// The controller's apply step: normalize, then commonMetadata.
	if opts.Normalize {
		if err := normalize.UnstructuredList(res.Objects); err != nil {
			return nil, fmt.Errorf("normalizing objects: %w", err)
		}
	}
	if ks := opts.Kustomization; ks != nil && ks.Spec.CommonMetadata != nil {
		ssautil.SetCommonMetadata(res.Objects, ks.Spec.CommonMetadata.Labels, ks.Spec.CommonMetadata.Annotations)
	}
	return res, nil
}

// secureBuild is generator.SecureBuild, Flux's build, on a file system
// that also keeps the size budgets: it refuses what SecureBuild refuses,
// and returns the refusal by name rather than inside krusty's nested
// message.
func secureBuild(work, dirPath string, allowRemoteBases bool, maxFile, maxLoad int64) (resmap.ResMap, error) {
	fs, err := newBudgetFS(work, allowRemoteBases, maxFile, maxLoad)
	if err != nil {
		return nil, err
	}
	m, err := generator.Build(fs, dirPath)
	if err != nil {
		if refused := fs.refusal(); refused != nil {
			return nil, fmt.Errorf("kustomize build refused: %w", refused)
		}
		return nil, buildError(err, work)
	}
	return m, nil
}

// resolvePaths returns the absolute root and the cleaned build path
// relative to it.
func resolvePaths(opts BuildOptions) (string, string, error) {
	if opts.Root == "" {
		return "", "", errors.New("BuildOptions.Root is required")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return "", "", fmt.Errorf("resolving root: %w", err)
	}
	rel := opts.Path
	if rel == "" && opts.Kustomization != nil {
		rel = opts.Kustomization.Spec.Path
	}
	if filepath.IsAbs(rel) {
		if rel, err = filepath.Rel(root, rel); err != nil {
			return "", "", fmt.Errorf("path outside root: %w", err)
		}
	}
	rel = filepath.Clean("/" + rel)[1:]
	if rel == "" {
		rel = "."
	}
	return root, rel, nil
}

// toUnstructured converts the Kustomization the way the controller does
// before handing it to the generator; a nil Kustomization is an empty one.
func toUnstructured(ks *kustomizev1.Kustomization) (unstructured.Unstructured, error) {
	if ks == nil {
		ks = &kustomizev1.Kustomization{}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ks)
	if err != nil {
		return unstructured.Unstructured{}, fmt.Errorf("converting Kustomization: %w", err)
	}
	return unstructured.Unstructured{Object: obj}, nil
}

// generate writes kustomization.yaml in dirPath like the controller's
// generate step, recording in res what was generated.
func generate(u unstructured.Unstructured, work, dirPath string, res *Result) error {
	gen := generator.NewGenerator(work, u)
	_, _, action, err := gen.GenerateManifest(dirPath)
	if err != nil {
		return fmt.Errorf("generating kustomization.yaml: %w", err)
	}
	if _, err := gen.WriteFile(dirPath); err != nil {
		return fmt.Errorf("generating kustomization.yaml: %w", err)
	}
	if action == generator.CreatedAction {
		res.Generated = true
		if res.GeneratedResources, err = generatedResources(dirPath); err != nil {
			return err
		}
	}
	return nil
}

// postBuild runs the controller's per-resource checks and substitutions.
func postBuild(ctx context.Context, opts BuildOptions, u unstructured.Unstructured, m resmap.ResMap) error {
	for _, r := range m.Resources() {
		if r.GetName() == "" || r.GetKind() == "" || r.GetApiVersion() == "" {
			return fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", r.String())
		}
		if opts.Kustomization == nil || opts.Kustomization.Spec.PostBuild == nil {
			continue
		}
		out, err := substitute(ctx, opts, u, r)
		if err != nil {
			return fmt.Errorf("post build failed for '%s/%s': %w", r.GetGvk(), r.GetName(), err)
		}
		if out != nil {
			if _, err := m.Replace(r); err != nil {
				return err
			}
		}
	}
	return nil
}
