package origin

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/reflux-dev/reflux/kustomize"
)

// builder walks the kustomization graph and builds the model.
type builder struct {
	root     string
	opts     kustomize.BuildOptions
	res      *kustomize.Result
	features map[Reason]bool
	flux     *fluxSpec
	// sites are where each unmodelled feature is declared, in build order:
	// what a refusal for that reason tells the user to edit instead.
	sites []site
	// resourceFiles are the files read as resources, each declaring
	// whole objects; otherFiles those read as anything else (a patch, a
	// generator's source).
	resourceFiles, otherFiles map[string]bool
	// originAnnotations is set when Flux's generator adds
	// buildMetadata: [originAnnotations] to a kustomization without
	// resources, so krusty annotates every object with its origin.
	originAnnotations bool
}

// site is the first place a feature that changes fields for reason is
// declared, or nil.
func (b *builder) site(r Reason) *Layer {
	for _, s := range b.sites {
		if s.reason == r && !s.adds {
			l := s.at
			return &l
		}
	}
	return nil
}

func (b *builder) abs(rel string) string { return filepath.Join(b.root, filepath.FromSlash(rel)) }

// model builds the modelled objects of the whole render.
func (b *builder) model() ([]*object, error) {
	top, err := b.topKustomization()
	if err != nil {
		return nil, err
	}
	if b.flux, err = loadFluxSpec(b); err != nil {
		return nil, err
	}
	if err := b.flux.overlay(b, top); err != nil {
		return nil, err
	}
	objs, err := b.accumulate(top, nil)
	if err != nil {
		return nil, err
	}
	b.substitute(objs)
	b.flux.commonMetadata(objs)
	return objs, nil
}

// topKustomization is the built directory's kustomization, or the one
// Flux's generator would write for a plain directory.
func (b *builder) topKustomization() (*kfile, error) {
	dir := b.res.Path
	if !b.res.Generated {
		k, err := b.loadKustomization(dir)
		// fluxcd/pkg/kustomize's generator sets buildMetadata to
		// originAnnotations on a kustomization with no resources, to
		// avoid krusty's "kustomization.yaml is empty" error.
		b.originAnnotations = err == nil && !k.hasResources
		return k, err
	}
	return &kfile{dir: dir, kind: "Kustomization", resources: b.res.GeneratedResources}, nil
}

// accumulate mirrors krusty's accumulateTarget: resources, generators,
// components, then the builtin transformers in krusty's order.
func (b *builder) accumulate(k *kfile, objs []*object) ([]*object, error) {
	for _, f := range k.features {
		b.features[f] = true
	}
	for _, s := range k.sites {
		b.features[s.reason] = true
	}
	b.sites = append(b.sites, k.sites...)
	objs, err := b.accumulateResources(k, objs)
	if err != nil {
		return nil, err
	}
	if objs, err = b.runGenerators(k, objs); err != nil {
		return nil, err
	}
	for _, c := range k.components {
		ck, err := b.loadKustomization(path.Join(k.dir, c))
		if err != nil {
			return nil, err
		}
		if objs, err = b.accumulate(ck, objs); err != nil {
			return nil, err
		}
		k.nsSpecs = append(k.nsSpecs, ck.nsSpecs...)
	}
	if objs, err = b.transform(k, objs); err != nil {
		return nil, err
	}
	// A transformer reflux does not run sees every object accumulated
	// here, so any field of them may differ from what it renders.
	if len(k.unrun) > 0 {
		for _, o := range objs {
			if o.refused == "" {
				at := k.unrun[0]
				o.refused, o.refusedAt = ReasonPlugin, &at
			}
		}
	}
	return objs, nil
}

func (b *builder) accumulateResources(k *kfile, objs []*object) ([]*object, error) {
	for _, r := range k.resources {
		if isRemote(r) {
			continue // recorded as a site by parse
		}
		p := path.Join(k.dir, r)
		st, err := os.Stat(b.abs(p))
		if err != nil {
			return nil, fmt.Errorf("resource %s: %w", p, err)
		}
		if !st.IsDir() {
			loaded, err := b.loadResources(p)
			if err != nil {
				return nil, err
			}
			objs = append(objs, loaded...)
			continue
		}
		sub, err := b.loadKustomization(p)
		if err != nil {
			return nil, err
		}
		subObjs, err := b.accumulate(sub, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, subObjs...)
		k.nsSpecs = append(k.nsSpecs, sub.nsSpecs...)
	}
	return objs, nil
}

// loadResources reads every document of a resource file. A document that
// is a List is not modelled and left for the cross-check to refuse.
func (b *builder) loadResources(p string) ([]*object, error) {
	b.resourceFiles = markRead(b.resourceFiles, p)
	data, err := os.ReadFile(b.abs(p))
	if err != nil {
		return nil, err
	}
	docs, err := parseDocs(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", p, err)
	}
	var out []*object
	for _, d := range docs {
		n, err := fromYAML(d, p, KindResource, "", identityPos)
		if err != nil {
			return nil, err
		}
		if n == nil || n.kind != mapNode || strings.HasSuffix(n.str("kind"), "List") {
			continue
		}
		out = append(out, newObject(n))
	}
	return out, nil
}

func (b *builder) transform(k *kfile, objs []*object) ([]*object, error) {
	var err error
	for _, set := range [][]patchSrc{k.patchesSM, k.patches} {
		for _, p := range set {
			if objs, err = applyPatch(objs, p); err != nil {
				return nil, fmt.Errorf("%s: %w", k.path, err)
			}
		}
	}
	if k.namespace != nil && k.namespace.value != "" {
		setNamespace(objs, k.namespace)
		setConfiguredNamespaces(objs, append(builtinNamespaceSpecs[:len(builtinNamespaceSpecs):len(builtinNamespaceSpecs)], k.nsSpecs...), k.namespace)
	}
	if k.namePrefix != nil && k.namePrefix.value != "" {
		addAffix(objs, k.namePrefix, true)
	}
	if k.nameSuffix != nil && k.nameSuffix.value != "" {
		addAffix(objs, k.nameSuffix, false)
	}
	applyLabels(objs, k)
	setPairs(objs, k.commonAnnotations, annotationSpecs)
	for _, p := range k.patchesJSON {
		if objs, err = applyPatch(objs, p); err != nil {
			return nil, fmt.Errorf("%s: %w", k.path, err)
		}
	}
	applyReplicas(objs, k.replicas)
	applyImages(objs, k.images)
	return objs, nil
}

// markRead adds p to read, made when nil.
func markRead(read map[string]bool, p string) map[string]bool {
	if read == nil {
		read = map[string]bool{}
	}
	read[p] = true
	return read
}
