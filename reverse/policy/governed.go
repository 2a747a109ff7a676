package policy

import (
	"context"
	"fmt"
	"sort"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// OptedIn reports whether a Kustomization carries the reverse-sync opt-in
// annotation. The annotation alone never makes reflux write: a policy must
// also select the Kustomization.
func OptedIn(ks client.Object) bool {
	return ks.GetAnnotations()[refluxv1.ReverseSyncAnnotation] == refluxv1.ReverseSyncEnabled
}

// Governed lists the Kustomizations in the policy's namespace that its
// selector selects and that opted in, but for those Flux applies to a
// remote cluster reflux cannot reach (CheckCluster).
func Governed(ctx context.Context, c client.Reader, obj *refluxv1.ReverseSyncPolicy) ([]kustomizev1.Kustomization, error) {
	selector, err := metav1.LabelSelectorAsSelector(&obj.Spec.KustomizationSelector)
	if err != nil {
		return nil, fmt.Errorf("parsing kustomizationSelector: %w", err)
	}
	list := &kustomizev1.KustomizationList{}
	if err := c.List(ctx, list, client.InNamespace(obj.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing Kustomizations in %s: %w", obj.Namespace, err)
	}
	governed := list.Items[:0]
	for _, ks := range list.Items {
		// One Flux applies to a remote cluster reflux cannot reach is
		// not governed (CheckCluster): its own Drifted condition says so.
		if OptedIn(&ks) && CheckCluster(&ks) == nil {
			governed = append(governed, ks)
		}
	}
	return governed, nil
}

// Governing returns the ReverseSyncPolicy that governs ks: the first,
// by name, of the policies in its namespace whose selector selects it. It
// returns nil when ks has not opted in or no policy selects it: the opt-in
// annotation alone never makes reflux act.
func Governing(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization) (*refluxv1.ReverseSyncPolicy, error) {
	if !OptedIn(ks) {
		return nil, nil
	}
	list := &refluxv1.ReverseSyncPolicyList{}
	if err := c.List(ctx, list, client.InNamespace(ks.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ReverseSyncPolicies in %s: %w", ks.Namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		p := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.KustomizationSelector)
		if err != nil {
			continue // the policy reconciler reports it
		}
		if sel.Matches(labels.Set(ks.Labels)) {
			return p, nil
		}
	}
	return nil, nil
}
