package origin

import (
	"fmt"
	"os"
	"path"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/kustomize"
)

// entry is a string value of a kustomization field with its position.
type entry struct {
	value string
	layer Layer
}

// text is the entry's value, "" for an absent entry: kustomize treats an
// empty images field as unset.
func (e *entry) text() string {
	if e == nil {
		return ""
	}
	return e.value
}

// kv is one key/value pair of a map field (commonLabels, labels.pairs, ...).
type kv struct {
	key string
	entry
}

// selector is a patch target.
type selector struct {
	group, version, kind, name, namespace string
	labelSelector, annotationSelector     string
}

// patchSrc is one patch: its parsed documents plus where it applies.
type patchSrc struct {
	docs   []*node
	target *selector
	via    string
}

type imageSpec struct {
	name                    string
	newName, newTag, digest *entry
}

type replicaSpec struct {
	name  string
	count int64
	layer Layer
}

type labelSpec struct {
	pairs            []kv
	includeSelectors bool
	includeTemplates bool
}

// kfile is the model's view of one kustomization file, with positions.
type kfile struct {
	dir  string // directory, relative to the root, slash separated
	path string // the file, relative to the root; "" when generated
	data []byte
	kind string // Kustomization or Component

	resources, components []string
	namespace             *entry
	namePrefix            *entry
	nameSuffix            *entry
	patchesSM, patches    []patchSrc
	patchesJSON           []patchSrc
	images                []imageSpec
	replicas              []replicaSpec
	commonLabels          []kv
	labels                []labelSpec
	commonAnnotations     []kv
	configMapGenerators   []genSpec
	secretGenerators      []genSpec
	genOptions            genOptions
	features              []Reason
	// sites are the unmodelled fields, where a user edits what they make.
	sites []site
	// hasResources is set when the resources field (not bases) lists
	// anything: Flux's generator adds buildMetadata otherwise.
	hasResources bool
	// unrun are the transformers entries that are not kustomize builtins
	// (an exec or container KRM function, say). Flux refuses to build
	// them and reflux never runs them, so the render lacks whatever they
	// would change: every object they transform is refused (issue 21 §5).
	unrun []Layer
	// nsSpecs are the paths a configurations file adds to the namespace
	// transformer's, here and in every kustomization accumulated here:
	// kustomize merges a base's transformer configuration into its
	// parent's, so a base's config is obeyed by the overlay's namespace.
	nsSpecs []fieldSpec
}

// site is where an unmodelled feature is declared.
type site struct {
	reason Reason
	at     Layer
	// adds is set for a feature that only adds objects (a remote base, a
	// Helm chart, a generator plugin): it cannot explain a changed field.
	adds bool
}

// addsObjects are the unmodelled fields that only add objects.
var addsObjects = map[string]bool{"helmCharts": true, "helmChartInflationGenerator": true, "generators": true}

// kustomizationFileNames are the names krusty recognises, in its order.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// findKustomization returns the kustomization file of dir, or "".
func (b *builder) findKustomization(dir string) string {
	for _, name := range kustomizationFileNames {
		p := path.Join(dir, name)
		if st, err := os.Stat(b.abs(p)); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// loadKustomization parses the kustomization file of dir.
func (b *builder) loadKustomization(dir string) (*kfile, error) {
	p := b.findKustomization(dir)
	if p == "" {
		return nil, fmt.Errorf("no kustomization file in %s", dir)
	}
	data, err := os.ReadFile(b.abs(p))
	if err != nil {
		return nil, err
	}
	docs, err := parseDocs(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", p, err)
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("parsing %s: want one YAML document, got %d", p, len(docs))
	}
	k := &kfile{dir: dir, path: p, data: data, kind: "Kustomization"}
	if err := k.parse(b, docs[0].Content[0]); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", p, err)
	}
	return k, nil
}

// unmodelled maps kustomization fields the model does not reproduce onto
// the reason any field they touch is refused.
var unmodelled = map[string]Reason{
	"helmCharts": ReasonHelmChart, "helmChartInflationGenerator": ReasonHelmChart,
	"generators": ReasonPlugin, "transformers": ReasonPlugin, "validators": ReasonPlugin,
	"configurations": ReasonTransformerConfig, "crds": ReasonTransformerConfig, "openapi": ReasonTransformerConfig,
	"replacements": ReasonReplacements, "vars": ReasonReplacements,
	"buildMetadata": ReasonBuildMetadata,
}

func (k *kfile) parse(b *builder, m *yaml.Node) error {
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("not a mapping")
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, v := canonicalKey(m.Content[i].Value), m.Content[i+1]
		if key == "resources" || key == "bases" {
			k.remoteEntries(v, key)
		}
		if key == "resources" && len(v.Content) > 0 {
			k.hasResources = true
		}
		if r, ok := unmodelled[key]; ok {
			k.features = append(k.features, r)
			kn := m.Content[i]
			k.sites = append(k.sites, site{reason: r, adds: addsObjects[key], at: Layer{File: k.path, Line: kn.Line, Column: kn.Column, Kind: KindResource, Via: key}})
			if key == "transformers" {
				k.unrunTransformers(b, v)
			}
			if key == "configurations" {
				k.configurations(b, v)
			}
			continue
		}
		if err := k.parseField(b, key, v); err != nil {
			return errAt(k.path, v, fmt.Errorf("%s: %w", key, err))
		}
	}
	return nil
}

// unrunTransformers records the transformers entries that are not
// kustomize builtins, each at its own line.
func (k *kfile) unrunTransformers(b *builder, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		return
	}
	for _, it := range v.Content {
		if !kustomize.IsBuiltinPlugin(b.abs(k.dir), it.Value) {
			k.unrun = append(k.unrun, Layer{File: k.path, Line: it.Line, Column: it.Column, Kind: KindResource, Via: "transformers"})
		}
	}
}

// kustomizationKeys are the kustomization.yaml fields the model reads or
// names as unmodelled, in krusty's spelling.
var kustomizationKeys = []string{
	"kind", "resources", "bases", "components", "namespace", "namePrefix", "nameSuffix",
	"commonLabels", "commonAnnotations", "labels", "images", "replicas", "patches",
	"patchesJson6902", "patchesStrategicMerge", "configMapGenerator", "secretGenerator",
	"generatorOptions", "helmCharts", "helmChartInflationGenerator", "generators",
	"transformers", "validators", "configurations", "crds", "openapi", "replacements",
	"vars", "buildMetadata",
}

// canonicalKey spells a kustomization key as krusty's Go struct does.
// krusty decodes the file with encoding/json, which matches field names
// case-insensitively, so every spelling krusty accepts is accepted here.
func canonicalKey(key string) string {
	for _, c := range kustomizationKeys {
		if strings.EqualFold(c, key) {
			return c
		}
	}
	return key
}

// remoteEntries records where each remote entry of resources (or bases) is
// declared: the place a user edits to change what a remote base renders.
func (k *kfile) remoteEntries(v *yaml.Node, key string) {
	for i, it := range v.Content {
		if isRemote(it.Value) {
			k.sites = append(k.sites, site{reason: ReasonRemoteBase, adds: true, at: Layer{File: k.path, Line: it.Line, Column: it.Column, Kind: KindResource,
				Via: fmt.Sprintf("%s[%d]", key, i)}})
		}
	}
}

func (k *kfile) parseField(b *builder, key string, v *yaml.Node) error {
	var err error
	switch key {
	case "kind":
		k.kind = v.Value
	case "resources", "bases":
		k.resources = append(k.resources, strList(v)...)
	case "components":
		k.components = strList(v)
	case "namespace":
		k.namespace = k.entryAt(v, KindNamespace, key)
	case "namePrefix":
		k.namePrefix = k.entryAt(v, KindNameAffix, key)
	case "nameSuffix":
		k.nameSuffix = k.entryAt(v, KindNameAffix, key)
	case "commonLabels":
		k.commonLabels = k.pairs(v, KindLabels, key)
	case "commonAnnotations":
		k.commonAnnotations = k.pairs(v, KindAnnotations, key)
	case "labels":
		k.labels = k.parseLabels(v)
	case "images":
		k.images = k.parseImages(v, KindImages, "images")
	case "replicas":
		k.replicas, err = k.parseReplicas(v)
	case "patches":
		k.patches, err = b.parsePatches(k, v, KindPatch, "patches", false)
	case "patchesJson6902":
		k.patchesJSON, err = b.parsePatches(k, v, KindPatch, "patchesJson6902", false)
	case "patchesStrategicMerge":
		k.patchesSM, err = b.parsePatches(k, v, KindPatch, "patchesStrategicMerge", true)
	case "configMapGenerator":
		k.configMapGenerators, err = k.parseGenerators(v, "configMapGenerator")
	case "secretGenerator":
		k.secretGenerators, err = k.parseGenerators(v, "secretGenerator")
	case "generatorOptions":
		k.genOptions = k.parseGenOptions(v)
	}
	return err
}

func (k *kfile) entryAt(v *yaml.Node, kind Kind, via string) *entry {
	return &entry{value: v.Value, layer: Layer{File: k.path, Line: v.Line, Column: v.Column, Kind: kind, Via: via}}
}

func (k *kfile) pairs(m *yaml.Node, kind Kind, via string) []kv {
	var out []kv
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := m.Content[i].Value
		out = append(out, kv{key: key, entry: *k.entryAt(m.Content[i+1], kind, via+"."+key)})
	}
	return out
}

func (k *kfile) parseLabels(v *yaml.Node) []labelSpec {
	var out []labelSpec
	for i, it := range v.Content {
		ls := labelSpec{pairs: k.pairs(mapValue(it, "pairs"), KindLabels, fmt.Sprintf("labels[%d].pairs", i))}
		ls.includeSelectors = mapValue(it, "includeSelectors") != nil && mapValue(it, "includeSelectors").Value == "true"
		ls.includeTemplates = mapValue(it, "includeTemplates") != nil && mapValue(it, "includeTemplates").Value == "true"
		out = append(out, ls)
	}
	return out
}

func (k *kfile) parseImages(v *yaml.Node, kind Kind, via string) []imageSpec {
	var out []imageSpec
	for i, it := range v.Content {
		spec := imageSpec{}
		if n := mapValue(it, "name"); n != nil {
			spec.name = n.Value
		}
		at := func(field string) *entry {
			if n := mapValue(it, field); n != nil && n.Value != "" {
				return k.entryAt(n, kind, fmt.Sprintf("%s[%d].%s", via, i, field))
			}
			return nil
		}
		spec.newName, spec.newTag, spec.digest = at("newName"), at("newTag"), at("digest")
		out = append(out, spec)
	}
	return out
}

func (k *kfile) parseReplicas(v *yaml.Node) ([]replicaSpec, error) {
	var out []replicaSpec
	for i, it := range v.Content {
		c := mapValue(it, "count")
		n := mapValue(it, "name")
		if c == nil || n == nil {
			return nil, fmt.Errorf("replicas[%d] needs name and count", i)
		}
		var count int64
		if err := c.Decode(&count); err != nil {
			return nil, err
		}
		l := Layer{File: k.path, Line: c.Line, Column: c.Column, Kind: KindReplicas, Via: fmt.Sprintf("replicas[%d].count", i)}
		out = append(out, replicaSpec{name: n.Value, count: count, layer: l})
	}
	return out, nil
}

// strList returns the scalar values of a sequence node.
func strList(v *yaml.Node) []string {
	var out []string
	for _, it := range v.Content {
		out = append(out, it.Value)
	}
	return out
}

// isRemote reports whether a resource entry is a URL rather than a path,
// with the same prefixes Flux's IsLocalRelativePath checks.
func isRemote(s string) bool {
	l := strings.ToLower(s)
	for _, p := range []string{"git::", "gh:", "ssh://", "https://", "http://", "git@", "github.com:", "github.com/"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return strings.Contains(s, "?ref=")
}
