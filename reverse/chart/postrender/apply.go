package postrender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"
)

// sourceAnnotation carries each object's index through the builds.
const sourceAnnotation = "postrender.reflux.dev/source"

// hookAnnotation marks a Helm hook, which Helm splits from the other
// objects by it.
const hookAnnotation = "helm.sh/hook"

// Object is one object after the post-renderers.
type Object struct {
	// Source is the index, among the objects Apply was given, of the
	// object it was made from; -1 when a patch took the annotation that
	// tells it away.
	Source int
	Object *unstructured.Unstructured
}

// Apply runs renderers' kustomize post-renderers, in order, over objs
// (a chart's objects as rendered, which it does not change), sending
// hooks as strategy says. It returns the objects as post-rendered, in the
// order of their sources.
func Apply(objs []*unstructured.Unstructured, renderers []helmv2.PostRenderer, strategy helmv2.PostRenderStrategy) ([]Object, error) {
	kustomizes := slices.ContainsFunc(renderers, func(r helmv2.PostRenderer) bool { return r.Kustomize != nil })
	var all, hooks, others []int
	for i, o := range objs {
		all = append(all, i)
		if _, ok := o.GetAnnotations()[hookAnnotation]; ok {
			hooks = append(hooks, i)
		} else {
			others = append(others, i)
		}
	}
	var out []Object
	batches := [][]int{all}
	switch strategy {
	case helmv2.PostRenderStrategySeparate:
		batches = [][]int{hooks, others}
	case helmv2.PostRenderStrategyNoHooks:
		batches = [][]int{others}
		for _, i := range hooks {
			out = append(out, Object{Source: i, Object: objs[i].DeepCopy()})
		}
	}
	for _, b := range batches {
		if len(b) == 0 || !kustomizes {
			for _, i := range b {
				out = append(out, Object{Source: i, Object: objs[i].DeepCopy()})
			}
			continue
		}
		done, err := run(objs, b, renderers)
		if err != nil {
			return nil, err
		}
		out = append(out, done...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, nil
}

// run post-renders the objects objs[i] for i in batch with each of
// renderers.
func run(objs []*unstructured.Unstructured, batch []int, renderers []helmv2.PostRenderer) ([]Object, error) {
	cur := make([]*unstructured.Unstructured, 0, len(batch))
	for _, i := range batch {
		o := objs[i].DeepCopy()
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[sourceAnnotation] = strconv.Itoa(i)
		o.SetAnnotations(ann)
		cur = append(cur, o)
	}
	for n, r := range renderers {
		if r.Kustomize == nil {
			continue
		}
		var err error
		if cur, err = build(cur, r.Kustomize); err != nil {
			return nil, fmt.Errorf("spec.postRenderers[%d].kustomize: %w", n, err)
		}
	}
	out := make([]Object, 0, len(cur))
	for _, o := range cur {
		out = append(out, untag(o, objs))
	}
	return out, nil
}

// untag takes the source annotation off o, and the annotations map too
// when only it made one.
func untag(o *unstructured.Unstructured, objs []*unstructured.Unstructured) Object {
	ann := o.GetAnnotations()
	src, err := strconv.Atoi(ann[sourceAnnotation])
	if _, ok := ann[sourceAnnotation]; !ok || err != nil || src < 0 || src >= len(objs) {
		return Object{Source: -1, Object: o}
	}
	delete(ann, sourceAnnotation)
	_, had, _ := unstructured.NestedFieldNoCopy(objs[src].Object, "metadata", "annotations")
	if len(ann) == 0 && !had {
		unstructured.RemoveNestedField(o.Object, "metadata", "annotations")
	} else {
		o.SetAnnotations(ann)
	}
	return Object{Source: src, Object: o}
}

// build runs one post-renderer over objs, as helm-controller's Kustomize
// post-renderer does: one resource file and a kustomization of the
// patches and images, in memory.
func build(objs []*unstructured.Unstructured, k *helmv2.Kustomize) ([]*unstructured.Unstructured, error) {
	const input = "helm-output.yaml"
	var manifest bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		manifest.WriteString("---\n")
		manifest.Write(b)
	}
	kz := ktypes.Kustomization{TypeMeta: ktypes.TypeMeta{APIVersion: ktypes.KustomizationVersion, Kind: ktypes.KustomizationKind},
		Resources: []string{input}}
	for _, p := range k.Patches {
		kz.Patches = append(kz.Patches, ktypes.Patch{Patch: p.Patch, Target: selector(p.Target)})
	}
	for _, im := range k.Images {
		kz.Images = append(kz.Images, ktypes.Image{Name: im.Name, NewName: im.NewName, NewTag: im.NewTag, Digest: im.Digest})
	}
	config, err := json.Marshal(kz)
	if err != nil {
		return nil, err
	}
	fs := filesys.MakeFsInMemory()
	if err := errors.Join(fs.WriteFile(input, manifest.Bytes()), fs.WriteFile("kustomization.yaml", config)); err != nil {
		return nil, err
	}
	rm, err := fluxkustomize.Build(fs, ".")
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, rm.Size())
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			return nil, err
		}
		// Through the JSON scheme, as the chart's objects were decoded:
		// integers stay int64.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", r.CurId(), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// selector is a patch's target as kustomize takes it.
func selector(t *kustomize.Selector) *ktypes.Selector {
	if t == nil {
		return nil
	}
	return &ktypes.Selector{
		ResId:              resid.ResId{Gvk: resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind}, Name: t.Name, Namespace: t.Namespace},
		AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
	}
}
