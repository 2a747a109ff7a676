package kustomize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ErrAmbiguousKustomization is returned by LoadKustomization for a file that
// holds several Flux Kustomizations: the caller must say which one.
var ErrAmbiguousKustomization = errors.New("file holds several Flux Kustomizations")

// LoadKustomizations reads every Flux Kustomization of a YAML stream, as in a
// cluster repository's clusters/<name>/infrastructure.yaml, in file order.
// Documents of other kinds (GitRepository, Namespace, kustomize's own
// kustomization.yaml) are skipped; a file with no Flux Kustomization is an error.
func LoadKustomizations(path string) ([]*kustomizev1.Kustomization, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading Flux Kustomization: %w", err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*kustomizev1.Kustomization
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		ks, err := decodeKustomization(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding Flux Kustomization %s (document %d): %w", path, i, err)
		}
		if ks != nil {
			out = append(out, ks)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no %s of %s", path, kustomizev1.KustomizationKind, kustomizev1.GroupVersion.Group)
	}
	return out, nil
}

// decodeKustomization decodes one document strictly, or returns nil when it
// is not a Flux Kustomization.
func decodeKustomization(doc []byte) (*kustomizev1.Kustomization, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	group, _, _ := strings.Cut(tm.APIVersion, "/")
	if tm.Kind != kustomizev1.KustomizationKind || group != kustomizev1.GroupVersion.Group {
		return nil, nil
	}
	ks := &kustomizev1.Kustomization{}
	if err := yaml.UnmarshalStrict(doc, ks); err != nil {
		return nil, err
	}
	return ks, nil
}

// LoadKustomization reads the one Flux Kustomization of a file, as found
// beside a tree (flux-kustomization.yaml) or in a cluster repository. A file
// holding several returns ErrAmbiguousKustomization naming them: reading the
// first one silently would trace the wrong spec (issue 12).
func LoadKustomization(path string) (*kustomizev1.Kustomization, error) {
	all, err := LoadKustomizations(path)
	if err != nil {
		return nil, err
	}
	if len(all) > 1 {
		return nil, fmt.Errorf("%w: %s holds %s; name one", ErrAmbiguousKustomization, path, names(all))
	}
	return all[0], nil
}

// SelectKustomization reads the Flux Kustomization called name, "NAME" or
// "NAMESPACE/NAME", from a file that may hold several.
func SelectKustomization(path, name string) (*kustomizev1.Kustomization, error) {
	all, err := LoadKustomizations(path)
	if err != nil {
		return nil, err
	}
	ns, n, hasNS := strings.Cut(name, "/")
	if !hasNS {
		ns, n = "", name
	}
	var found []*kustomizev1.Kustomization
	for _, ks := range all {
		if ks.Name == n && (!hasNS || ks.Namespace == ns) {
			found = append(found, ks)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("%s: no Flux Kustomization %s; it holds %s", path, name, names(all))
	}
	return nil, fmt.Errorf("%w: %s holds %s; name one as NAMESPACE/NAME", ErrAmbiguousKustomization, path, names(found))
}

func names(all []*kustomizev1.Kustomization) string {
	s := make([]string, len(all))
	for i, ks := range all {
		s[i] = ks.Namespace + "/" + ks.Name
	}
	return strings.Join(s, ", ")
}
