package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// conditionsObject is a Flux object reflux writes conditions on: a
// Kustomization, or a HelmRelease.
type conditionsObject interface {
	client.Object
	conditions.Setter
}

// conditionsPatcher writes reflux's own conditions on a Flux object (a
// Kustomization, a HelmRelease), the one part of its status reflux owns. It is Flux's patch helper's
// conditions step (fluxcd/pkg/runtime/patch): the change between the
// object as read and as reconciled is applied to the latest version with
// reflux's conditions owned, under an optimistic lock, retried on
// conflict. The helper's own Patch would follow it with a status patch of
// everything but the conditions, which for reflux is always empty: one
// request per reconcile for nothing.
type conditionsPatcher struct {
	client client.Client
	before conditionsObject
	owned  []string
}

func newConditionsPatcher(c client.Client, obj conditionsObject, owned ...string) *conditionsPatcher {
	return &conditionsPatcher{client: c, before: obj.DeepCopyObject().(conditionsObject), owned: owned}
}

// Patch writes what changed in obj's owned conditions; nothing when none
// did.
func (p *conditionsPatcher) Patch(ctx context.Context, obj conditionsObject) error {
	diff := conditions.NewPatch(p.before, obj)
	if diff.IsZero() {
		return nil
	}
	backoff := wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 2, Jitter: 1}
	var lastErr error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		// The cached client's Get replaces the whole object.
		latest := p.before.DeepCopyObject().(conditionsObject)
		if err := p.client.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
			return false, err
		}
		patch := client.MergeFromWithOptions(latest.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		if err := diff.Apply(latest, conditions.WithOwnedConditions(p.owned...)); err != nil {
			return false, err
		}
		lastErr = p.client.Status().Patch(ctx, latest, patch, client.FieldOwner(refluxv1.FieldManager))
		if apierrors.IsConflict(lastErr) {
			return false, nil // Flux wrote meanwhile: again, on its version
		}
		return lastErr == nil, lastErr
	})
	if wait.Interrupted(err) && lastErr != nil {
		err = lastErr
	}
	if err != nil {
		return fmt.Errorf("patching conditions %v: %w", p.owned, err)
	}
	return nil
}
