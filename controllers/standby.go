package controllers

import (
	"context"
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/standby"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// StandbyGovernance tells a standby replica (reverse/standby) which
// Kustomizations' objects the leader would hold, by the reconciler's own
// rules, read from the cache: opted in and selected by a policy that is
// not suspended and lets reflux hold, applied by Flux, with a source
// reference Flux accepts. Kustomizations that Flux applies to a remote
// cluster are left out: their engines are the leader's alone.
type StandbyGovernance struct {
	Client                client.Reader
	DefaultServiceAccount string
	NoCrossNamespaceRefs  bool
}

// Governed lists them.
func (s StandbyGovernance) Governed(ctx context.Context) ([]standby.Governed, error) {
	list := &kustomizev1.KustomizationList{}
	if err := s.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing Kustomizations: %w", err)
	}
	var out []standby.Governed
	for i := range list.Items {
		ks := &list.Items[i]
		if !ks.DeletionTimestamp.IsZero() || ks.Status.LastAppliedRevision == "" || ks.Spec.KubeConfig != nil ||
			tenancy.CheckSourceRef(ks, s.NoCrossNamespaceRefs) != nil {
			continue
		}
		governing, err := policy.Governing(ctx, s.Client, ks)
		if err != nil {
			return nil, err
		}
		if governing == nil || governing.Spec.Suspend {
			continue
		}
		if c, err := classify.New(&governing.Spec); err != nil || !c.MayHold() {
			continue
		}
		out = append(out, standby.Governed{Ref: refluxv1.KustomizationRef{Namespace: ks.Namespace, Name: ks.Name},
			Identity: tenancy.Identity(ks, s.DefaultServiceAccount), Kinds: watchedKinds(ks, nil)})
	}
	return out, nil
}

// EngineCovers reports whether the engine of gov and its watches w have
// taken over what a standby watched of g: the Kustomization governed, and
// its watches listed.
func EngineCovers(gov interface {
	Governs(id types.NamespacedName) bool
}, w *Watcher, g standby.Governed) bool {
	return gov.Governs(g.Key()) && w.ListedFor(g.Key())
}
