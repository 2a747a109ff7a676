package desired

import (
	"context"
	"fmt"
	"sync"

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

// Render is the desired state of one Kustomization at one revision. It is
// never changed once made, and is shared by every worker.
type Render struct {
	// Revision is the source revision rendered.
	Revision string
	// Generation is the Kustomization generation whose spec was applied.
	Generation int64
	// Objects are the built objects by key, SOPS-encrypted ones left out,
	// as kustomize built them (commonMetadata included). Object returns
	// one as kustomize-controller applies it.
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
	// Built is the build as kustomize produced it, sharing its objects with
	// Objects: write-back verifies its edits against it instead of building
	// the same tree again (one build per revision).
	Built *kustomize.Result
	// Files is the manifest of the tree built; nil when not taken.
	Files *Manifest
	// Substitutions is a digest of the postBuild substitution data the
	// tree was built with.
	Substitutions string
	// FluxVersion is the kustomize-controller version the build stamped
	// on buildMetadata's managed-by label (kustomize.BuildOptions
	// ManagedByVersion): write-back builds its edits the same way.
	FluxVersion string

	// deltas are what changed to other revisions' trees (Reusable),
	// worked out once each.
	deltaMu sync.Mutex
	deltas  map[string]delta

	// owner stamps Flux's owner labels.
	owner               *ssa.ResourceManager
	ksName, ksNamespace string
}

// Object returns the desired object with the given key as
// kustomize-controller applies it: normalised, with Flux's owner labels.
// It is stamped on each call, on a copy the caller owns: keeping stamped
// copies of every object beside the build would double the memory a large
// tree takes, and stamping one object costs microseconds.
func (r *Render) Object(k ObjectKey) (*unstructured.Unstructured, bool) {
	o, ok := r.Objects[k]
	if !ok {
		return nil, false
	}
	out := o.DeepCopy()
	objs := []*unstructured.Unstructured{out}
	if err := normalize.UnstructuredList(objs); err != nil {
		// Flux could not normalise it either; the dry run normalises again
		// and reports why, so the object as built is compared meanwhile.
		out = o.DeepCopy()
		objs[0] = out
	}
	if r.owner != nil {
		r.owner.SetOwnerLabels(objs, r.ksName, r.ksNamespace)
	}
	return out, true
}

// builder is kustomize.Build, or the Renderer's budgeted call of it.
type builder func(ctx context.Context, opts kustomize.BuildOptions) (*kustomize.Result, error)

// render builds root for ks and indexes it. Stamping as kustomize-controller
// does right before server-side apply (normalize, owner labels) happens in
// Object, so the drift engine compares like with like.
func render(ctx context.Context, opts kustomize.BuildOptions, revision string, build builder) (*Render, error) {
	ks := opts.Kustomization
	res, err := build(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("building %s at %s: %w", ks.Spec.Path, revision, err)
	}
	// A newer revision may have replaced this render while krusty ran,
	// which cannot be interrupted: stop before the index costs as much again.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	index, indexErr := origin.NewIndex(opts, res)
	out := &Render{Revision: revision, Generation: ks.Generation, Objects: make(map[ObjectKey]*unstructured.Unstructured, len(res.Objects)),
		Index: index, IndexErr: indexErr, Built: res, Substitutions: SubstitutionsDigest(opts.SubstituteFrom), FluxVersion: opts.ManagedByVersion,
		ksName: ks.Name, ksNamespace: ks.Namespace,
		// The owner labels are how kustomize-controller (and reflux's live
		// watches) recognise the objects of a Kustomization.
		owner: ssa.NewResourceManager(nil, nil, ssa.Owner{Field: "kustomize-controller", Group: kustomizev1.GroupVersion.Group})}
	seen := map[schema.GroupVersionKind]bool{}
	for _, o := range res.Objects {
		// kustomize-controller decrypts SOPS documents with keys reflux
		// does not hold, so what it applies is unknowable here: comparing
		// the ciphertext would report every encrypted field as drift.
		if _, ok := o.Object["sops"]; ok {
			out.Encrypted = append(out.Encrypted, KeyOf(o))
			continue
		}
		out.Objects[KeyOf(o)] = o
		if gvk := o.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			out.GVKs = append(out.GVKs, gvk)
		}
	}
	return out, nil
}
