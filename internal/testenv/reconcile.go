package testenv

import (
	"context"
	"fmt"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// artifactSource is a Flux source, which announces an artifact.
type artifactSource interface {
	GetArtifact() *meta.Artifact
}

// FluxObject is a Flux resource that reports conditions, such as a
// GitRepository or a Kustomization.
type FluxObject interface {
	client.Object
	GetConditions() []metav1.Condition
}

// RequestReconcile sets reconcile.fluxcd.io/requestedAt to a new token, as
// `flux reconcile` does, and returns the token.
func (e *Env) RequestReconcile(ctx context.Context, obj client.Object) (string, error) {
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	if err := e.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", fmt.Errorf("requesting reconcile of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return token, nil
}

// Reconcile forces a reconcile of obj and waits, up to Options.WaitTimeout,
// until the controller reports status.lastHandledReconcileAt equal to the
// request: Flux sets it only after the whole reconcile, apply included,
// has run. obj is refreshed in place; its conditions tell how it went.
func (e *Env) Reconcile(ctx context.Context, obj client.Object) error {
	token, err := e.RequestReconcile(ctx, obj)
	if err != nil {
		return err
	}
	var last string
	err = e.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, fmt.Errorf("getting %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		last, err = lastHandledReconcileAt(obj)
		return last == token, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to handle reconcile request %s (last handled %q): %w",
			client.ObjectKeyFromObject(obj), token, last, err)
	}
	return nil
}

// WaitForReady waits, up to Options.WaitTimeout, until obj has Ready=True
// for its current generation. obj is refreshed in place.
func (e *Env) WaitForReady(ctx context.Context, obj FluxObject) error {
	var ready *metav1.Condition
	err := e.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, fmt.Errorf("getting %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		ready = apimeta.FindStatusCondition(obj.GetConditions(), meta.ReadyCondition)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != obj.GetGeneration() {
			return false, nil
		}
		// Flux patches its conditions before the rest of the status, so a
		// Kustomization can read Ready before its applied revision and
		// inventory are written: wait for those too.
		if ks, ok := obj.(*kustomizev1.Kustomization); ok {
			return ks.Status.LastAppliedRevision != "" &&
				ks.Status.LastAppliedRevision == ks.Status.LastAttemptedRevision, nil
		}
		// A source is patched the same way, so its Ready can come before
		// the artifact it announces.
		if src, ok := obj.(artifactSource); ok {
			return src.GetArtifact() != nil, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be ready (Ready: %s): %w",
			client.ObjectKeyFromObject(obj), describe(ready), err)
	}
	return nil
}

// poll runs cond every 250ms until it is true, it fails, or
// Options.WaitTimeout passes.
func (e *Env) poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, e.opts.WaitTimeout, true, cond)
}

// lastHandledReconcileAt reads status.lastHandledReconcileAt, which every
// Flux kind embeds through meta.ReconcileRequestStatus.
func lastHandledReconcileAt(obj client.Object) (string, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", fmt.Errorf("converting %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	status, _ := u["status"].(map[string]any)
	last, _ := status["lastHandledReconcileAt"].(string)
	return last, nil
}

// describe renders a condition for an error message.
func describe(c *metav1.Condition) string {
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s, reason %s, generation %d: %s", c.Status, c.Reason, c.ObservedGeneration, c.Message)
}
