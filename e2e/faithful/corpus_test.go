package faithful

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/kustomize"
)

// corpusDir holds the trees reflux's own golden tests build.
const corpusDir = "../../kustomize/testdata"

// fluxCase is one build of a corpus tree: one flux-kustomization*.yaml
// beside it, or the bare tree when none is given (as the origin golden
// tests define the corpus).
type fluxCase struct {
	// Name is the tree, plus the flux-kustomization file's suffix.
	Name string
	// Tree is the corpus directory name, which is also its git repository.
	Tree string
	// Namespace holds the case's GitRepository, Kustomization and
	// substituteFrom sources, and is the targetNamespace when one is needed.
	Namespace string
	// Kustomization is the spec both reflux and Flux apply.
	Kustomization *kustomizev1.Kustomization
	// SubstituteFrom is substitute-from.yaml: created in the cluster and
	// passed to kustomize.Build.
	SubstituteFrom []kustomize.SubstituteSource
	// Render is reflux's build of the case, nil when BuildErr is set.
	Render *kustomize.Result
	// BuildErr is why reflux could not build the case.
	BuildErr error
}

// Root is the case's source tree on disk.
func (c *fluxCase) Root() string { return filepath.Join(corpusDir, c.Tree) }

// Repo is the git repository the tree is pushed to.
func (c *fluxCase) Repo() string { return c.Tree + ".git" }

// loadCorpus returns every case of every corpus tree, sorted by name.
func loadCorpus() ([]*fluxCase, error) {
	trees, err := os.ReadDir(corpusDir)
	if err != nil {
		return nil, fmt.Errorf("reading corpus: %w", err)
	}
	var out []*fluxCase
	for _, tree := range trees {
		if !tree.IsDir() {
			continue
		}
		cases, err := treeCases(tree.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, cases...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// treeCases loads one tree's cases. A tree is built bare when it has no
// flux-kustomization*.yaml, or when it has a golden.txt but no plain
// flux-kustomization.yaml to go with it (plain-dir: bare and -tenant).
func treeCases(tree string) ([]*fluxCase, error) {
	root := filepath.Join(corpusDir, tree)
	files, err := filepath.Glob(filepath.Join(root, "flux-kustomization*.yaml"))
	if err != nil {
		return nil, err
	}
	_, goldenErr := os.Stat(filepath.Join(root, "golden.txt"))
	_, plainErr := os.Stat(filepath.Join(root, "flux-kustomization.yaml"))
	if len(files) == 0 || goldenErr == nil && plainErr != nil {
		files = append([]string{""}, files...)
	}
	subst, err := loadSubstituteFrom(root)
	if err != nil {
		return nil, err
	}
	var out []*fluxCase
	for _, f := range files {
		specs, err := loadSpecs(f, tree)
		if err != nil {
			return nil, err
		}
		for _, ks := range specs {
			c := &fluxCase{Name: tree, Tree: tree, SubstituteFrom: subst, Kustomization: ks}
			if f != "" {
				c.Name += strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "flux-kustomization"), ".yaml")
			}
			// A file holding several Kustomizations (a cluster
			// repository's layout) is one case per Kustomization, as in
			// kustomize/origin's golden tests.
			if len(specs) > 1 {
				c.Name += "-" + ks.Name
			}
			c.Namespace = "faithful-" + c.Name
			out = append(out, c)
		}
	}
	return out, nil
}

// loadSpecs reads the Kustomizations of a flux-kustomization file, or makes
// the empty spec a bare tree is built with.
func loadSpecs(file, tree string) ([]*kustomizev1.Kustomization, error) {
	if file == "" {
		ks := &kustomizev1.Kustomization{}
		ks.Name = tree
		ks.Spec.Path = "./"
		ks.Spec.Prune = true
		return []*kustomizev1.Kustomization{ks}, nil
	}
	return kustomize.LoadKustomizations(file)
}

// loadSubstituteFrom reads the tree's resolved substituteFrom data, if any.
func loadSubstituteFrom(root string) ([]kustomize.SubstituteSource, error) {
	data, err := os.ReadFile(filepath.Join(root, "substitute-from.yaml"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []kustomize.SubstituteSource
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", root, err)
	}
	return out, nil
}

// build renders the case with reflux.
func (c *fluxCase) build(ctx context.Context) (*kustomize.Result, error) {
	return kustomize.Build(ctx, kustomize.BuildOptions{
		Root:           c.Root(),
		Kustomization:  c.Kustomization,
		SubstituteFrom: c.SubstituteFrom,
		// As the environment's kustomize-controller stamps managed-by.
		ManagedByVersion: testenv.FluxVersion(),
	})
}
