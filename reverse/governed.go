package reverse

import (
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
)

// Governed is what the engine needs to know of one governed Kustomization.
// The Kustomization reconciler publishes it; it is never changed after, so
// every stage may read it without locks.
type Governed struct {
	// Kustomization and Policy are deep copies.
	Kustomization *kustomizev1.Kustomization
	Policy        *refluxv1.ReverseSyncPolicy
	Classifier    *classify.Classifier
	// SourceRevision is the revision the source serves now; "" when
	// unknown. A revision Flux has not applied yet means a rollout.
	SourceRevision string
	// SourceInterval is the source's interval: branch checks run at most
	// once per interval.
	SourceInterval time.Duration
	// RepoURL is the Git repository write-back pushes to; "" when the
	// source is not a GitRepository.
	RepoURL string
	// SubstituteFrom is the resolved postBuild substitution data.
	SubstituteFrom []kustomize.SubstituteSource
	// Cluster names the remote cluster Flux applies the Kustomization to
	// (reverse/fleet.Ref), "" for the cluster reflux runs in. Records say
	// it; the engine that governs the Kustomization is that cluster's.
	Cluster string
	// Identity is the user the Kustomization's dry runs, holds and
	// releases go out as (reverse/tenancy.Identity); "" is reflux's own.
	Identity string
	// Manifests are the trees of the applied revision and, while one rolls
	// out, of the source's newer one (nil where not known yet): what tells
	// which objects an older render still describes (Snapshot.Usable).
	Manifests []*desired.Manifest
}

// Key returns the Kustomization's key.
func (g *Governed) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: g.Kustomization.Namespace, Name: g.Kustomization.Name}
}

// Ref names the Kustomization as a Drift record does.
func (g *Governed) Ref() refluxv1.KustomizationRef {
	return refluxv1.KustomizationRef{Namespace: g.Kustomization.Namespace, Name: g.Kustomization.Name, Cluster: g.Cluster}
}

// MayHold reports whether the policy lets reflux hold anything (it does
// not under spec.hold: Never).
func (g *Governed) MayHold() bool {
	return g.Classifier == nil || g.Classifier.MayHold()
}

// Snapshot is a governed Kustomization as a worker reads it once: what is
// governed, the latest render, and whether that render is current.
type Snapshot struct {
	Gov    *Governed
	Render *desired.Render
	// Current is true when Render is what Flux applied (IsCurrent).
	Current bool
}

// Usable reports whether a live change to the object with key can be
// evaluated now: against the current render, or against an older one
// that renders the object as every revision Flux has applied or is
// applying does (issue 20), so a record never waits for a build of a
// large tree when the object's files did not change. The older render
// must have been built with the Kustomization's spec as Flux reconciled
// it and with today's substitutions.
func (s Snapshot) Usable(key desired.ObjectKey) bool {
	if s.Current {
		return true
	}
	r, g := s.Render, s.Gov
	if r == nil || g == nil {
		return false
	}
	ks := g.Kustomization
	if ks.Spec.Suspend || r.Generation != ks.Generation || ks.Generation != ks.Status.ObservedGeneration ||
		r.Substitutions != desired.SubstitutionsDigest(g.SubstituteFrom) {
		return false
	}
	return r.Reusable(key, g.Manifests)
}

// Revision is the revision a decision made on the snapshot is of: the
// render's when it is current, else the applied one, which an older
// render describes as well where it is Usable.
func (s Snapshot) Revision() string {
	if s.Current || s.Gov == nil {
		return s.Render.Revision
	}
	return s.Gov.Kustomization.Status.LastAppliedRevision
}

// RollingOut reports whether Flux is applying something reflux has not
// rendered: a spec it has not reconciled yet, or a source revision newer
// than the applied one while it has not failed (a failed Kustomization
// keeps the applied revision live, so that is what reflux compares with).
func RollingOut(g *Governed) bool {
	ks := g.Kustomization
	if ks.Spec.Suspend {
		return false
	}
	if ks.Generation != ks.Status.ObservedGeneration {
		return true
	}
	return g.SourceRevision != "" && g.SourceRevision != ks.Status.LastAppliedRevision &&
		!conditions.IsFalse(ks, meta.ReadyCondition)
}

// IsCurrent reports whether render is what the Kustomization applied, so
// that live changes may be evaluated against it.
func IsCurrent(g *Governed, render *desired.Render) bool {
	ks := g.Kustomization
	return render != nil && render.Revision == ks.Status.LastAppliedRevision &&
		render.Generation == ks.Generation && !RollingOut(g)
}

// Applied reports whether obj is in ks's inventory: Flux applied it, and
// has not pruned it. An object Flux applied that is not live was deleted
// by someone else, since Flux recreates what its inventory holds.
func Applied(ks *kustomizev1.Kustomization, obj *unstructured.Unstructured) bool {
	inv := ks.Status.Inventory
	if inv == nil {
		return false
	}
	id := object.UnstructuredToObjMetadata(obj).String()
	for _, e := range inv.Entries {
		if e.ID == id {
			return true
		}
	}
	return false
}

// AuditedWrite is a write to an object as the audit log tells it: who,
// how and when, never what. For Secrets reflux may not read, that is all
// it knows of them: Kubernetes RBAC has no metadata-only read, since a
// list or watch returns the data too.
type AuditedWrite struct {
	Namespace, Name string
	// Verb is the audit event's: create, update, patch, apply or delete.
	Verb string
	// Manager is the request's field manager, or its user agent's product
	// when the client sent none (the apiserver's own default).
	Manager string
	// User and Groups are the authenticated (or impersonated) user.
	User   string
	Groups []string
	// Flux is true when kustomize-controller made the write.
	Flux bool
	// Time the apiserver completed the request.
	Time time.Time
}

// Deleter is who deleted an object, from the audit log.
type Deleter struct {
	// User is the authenticated (or impersonated) user.
	User string
	// Flux is true when the request came from kustomize-controller.
	Flux bool
	// Helm is true when it came from helm-controller: an upgrade, a
	// rollback or an uninstall of a chart's objects, which is Flux's own
	// deletion for them, though not for a Kustomization's.
	Helm bool
}
