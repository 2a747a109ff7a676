package kustomize

import (
	"fmt"
	"os"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"sigs.k8s.io/yaml"
)

// LoadKustomization reads a Flux Kustomization from a YAML file, as found
// beside a tree (flux-kustomization.yaml) or in a cluster repository.
func LoadKustomization(path string) (*kustomizev1.Kustomization, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading Flux Kustomization: %w", err)
	}
	ks := &kustomizev1.Kustomization{}
	if err := yaml.UnmarshalStrict(data, ks); err != nil {
		return nil, fmt.Errorf("decoding Flux Kustomization %s: %w", path, err)
	}
	if ks.Kind != kustomizev1.KustomizationKind {
		return nil, fmt.Errorf("%s: kind is %q, want %q", path, ks.Kind, kustomizev1.KustomizationKind)
	}
	return ks, nil
}
