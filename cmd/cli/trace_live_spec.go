package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// errStop ends a walk early.
var errStop = errors.New("stop")

// walkYAML calls fn with every .yaml or .yml file under root until fn
// returns false.
func walkYAML(root string, fn func(path string, data []byte) bool) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := strings.ToLower(filepath.Ext(p)); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if !fn(p, data) {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// sameSpec compares what the build uses of two Kustomization specs: the
// positions of one are only valid for the other when these agree.
func sameSpec(a, b *kustomizev1.Kustomization) bool {
	x, y := a.Spec, b.Spec
	return x.Path == y.Path && x.TargetNamespace == y.TargetNamespace && x.NamePrefix == y.NamePrefix &&
		x.NameSuffix == y.NameSuffix && equality.Semantic.DeepEqual(x.Patches, y.Patches) &&
		equality.Semantic.DeepEqual(x.Images, y.Images) && equality.Semantic.DeepEqual(x.Components, y.Components) &&
		equality.Semantic.DeepEqual(x.CommonMetadata, y.CommonMetadata) && equality.Semantic.DeepEqual(x.PostBuild, y.PostBuild)
}
