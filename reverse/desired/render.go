package desired

import (
	"context"
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// ObjectKey identifies a rendered object as the cluster knows it.
type ObjectKey struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// KeyOf returns the key of an object.
func KeyOf(u *unstructured.Unstructured) ObjectKey {
	return ObjectKey{Group: u.GroupVersionKind().Group, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// String renders the key as Kind/namespace/name.
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Kind + "/" + k.Name
	}
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// Render is the desired state of one Kustomization at one revision.
type Render struct {
	// Revision is the source revision rendered.
	Revision string
	// Generation is the Kustomization generation whose spec was applied.
	Generation int64
	// Objects are the objects as kustomize-controller applies them: built,
	// normalised, with commonMetadata and Flux's owner labels.
	Objects map[ObjectKey]*unstructured.Unstructured
	// GVKs are the distinct kinds rendered, for the live watches.
	GVKs []schema.GroupVersionKind
	// Index maps each rendered field to its origin. It is nil when the
	// overlay cannot be indexed; IndexErr then says why.
	Index    *origin.Index
	IndexErr error
	// Encrypted are SOPS-encrypted objects Flux decrypts with its own keys;
	// reflux cannot know their applied values, so it does not watch them.
	Encrypted []ObjectKey
	// Built is the build as kustomize produced it, before Flux's stamping:
	// write-back verifies its edits against it instead of building the
	// same tree again (one build per revision).
	Built *kustomize.Result
}

// Object returns the desired object with the given key.
func (r *Render) Object(k ObjectKey) (*unstructured.Unstructured, bool) {
	o, ok := r.Objects[k]
	return o, ok
}

// render builds root for ks and stamps it the way kustomize-controller
// does right before server-side apply (normalize, commonMetadata, owner
// labels), so the drift engine compares like with like.
func render(ctx context.Context, root string, ks *kustomizev1.Kustomization, revision string, subst []kustomize.SubstituteSource) (*Render, error) {
	opts := kustomize.BuildOptions{Root: root, Kustomization: ks, SubstituteFrom: subst}
	res, err := kustomize.Build(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("building %s at %s: %w", ks.Spec.Path, revision, err)
	}
	// A newer revision may have replaced this render while krusty ran,
	// which cannot be interrupted: stop before the index costs as much again.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Index the render as built: the index cross-checks its model against
	// these objects, before reflux stamps what Flux adds at apply time.
	index, indexErr := origin.NewIndex(opts, res)
	objects := make([]*unstructured.Unstructured, 0, len(res.Objects))
	var encrypted []ObjectKey
	for _, o := range res.Objects {
		// kustomize-controller decrypts SOPS documents with keys reflux
		// does not hold, so what it applies is unknowable here: comparing
		// the ciphertext would report every encrypted field as drift.
		if _, ok := o.Object["sops"]; ok {
			encrypted = append(encrypted, KeyOf(o))
			continue
		}
		objects = append(objects, o.DeepCopy())
	}
	if err := normalize.UnstructuredList(objects); err != nil {
		return nil, fmt.Errorf("normalising build output: %w", err)
	}
	// The owner labels are how kustomize-controller (and reflux's live
	// watches) recognise the objects of a Kustomization.
	owner := ssa.NewResourceManager(nil, nil, ssa.Owner{Field: "kustomize-controller", Group: kustomizev1.GroupVersion.Group})
	owner.SetOwnerLabels(objects, ks.Name, ks.Namespace)

	out := &Render{Revision: revision, Generation: ks.Generation, Objects: make(map[ObjectKey]*unstructured.Unstructured, len(objects)),
		Index: index, IndexErr: indexErr, Encrypted: encrypted, Built: res}
	seen := map[schema.GroupVersionKind]bool{}
	for _, o := range objects {
		out.Objects[KeyOf(o)] = o
		if gvk := o.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			out.GVKs = append(out.GVKs, gvk)
		}
	}
	return out, nil
}
