package kustomize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
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
		return nil, fmt.Errorf("%w: %s holds %s; %s", ErrAmbiguousKustomization, path, names(all), nameOne(path, all))
	}
	return all[0], nil
}

// SelectKustomizationForPath reads, from a file that may hold several, the
// Flux Kustomization whose spec.path is dir, the directory to build relative
// to the source root. A file with one Kustomization returns it whatever its
// path, as dir overrides spec.path. With several, the one whose spec.path
// names dir is taken; none or more than one is ErrAmbiguousKustomization,
// since guessing would trace the wrong spec (issue 12, issue 21).
func SelectKustomizationForPath(file, dir string) (*kustomizev1.Kustomization, error) {
	all, err := LoadKustomizations(file)
	if err != nil {
		return nil, err
	}
	if len(all) == 1 {
		return all[0], nil
	}
	found := MatchSpecPath(all, dir)
	if len(found) == 1 {
		return found[0], nil
	}
	what := "none has spec.path " + CleanSpecPath(dir)
	if len(found) > 1 {
		what = "more than one has spec.path " + CleanSpecPath(dir)
	}
	return nil, fmt.Errorf("%w: %s holds %s; %s; %s", ErrAmbiguousKustomization, file, pathNames(all), what, nameOne(file, all))
}

// MatchSpecPath returns the Kustomizations whose spec.path names dir, both
// compared by CleanSpecPath. When none names it exactly, those whose
// spec.path is dir's trailing directories are taken: the source root may
// sit below the repository root, as an OCI artifact pushed from a sub
// directory does. The source root itself ("./") only matches exactly.
func MatchSpecPath(all []*kustomizev1.Kustomization, dir string) []*kustomizev1.Kustomization {
	want := CleanSpecPath(dir)
	var exact, tail []*kustomizev1.Kustomization
	for _, ks := range all {
		p := CleanSpecPath(ks.Spec.Path)
		switch {
		case p == want:
			exact = append(exact, ks)
		case p != "." && strings.HasSuffix(want, "/"+p):
			tail = append(tail, ks)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return tail
}

// CleanSpecPath normalises a spec.path the way kustomize-controller joins it
// under the source root: "./apps/prod", "apps/prod/" and "/apps/prod" are
// all "apps/prod", and "", "./" and "/" are the root ".".
func CleanSpecPath(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// nameOne spells out how to pick one of several Kustomizations of file.
func nameOne(file string, all []*kustomizev1.Kustomization) string {
	ks := all[0]
	return fmt.Sprintf("name one as FILE#NAME or FILE#NAMESPACE/NAME, e.g. %s#%s/%s", file, ks.Namespace, ks.Name)
}

// pathNames lists NAMESPACE/NAME (path ./spec/path) of each Kustomization.
func pathNames(all []*kustomizev1.Kustomization) string {
	s := make([]string, len(all))
	for i, ks := range all {
		s[i] = fmt.Sprintf("%s/%s (path %s)", ks.Namespace, ks.Name, CleanSpecPath(ks.Spec.Path))
	}
	return strings.Join(s, ", ")
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
	return nil, fmt.Errorf("%w: %s holds %s; %s", ErrAmbiguousKustomization, path, names(found), nameOne(path, found))
}

func names(all []*kustomizev1.Kustomization) string {
	s := make([]string, len(all))
	for i, ks := range all {
		s[i] = ks.Namespace + "/" + ks.Name
	}
	return strings.Join(s, ", ")
}
