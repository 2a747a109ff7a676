package execute

import (
	"context"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
)

// hold applies the decision's hold or release.
func (x *Executor) hold(ctx context.Context, p *Plan, d decide.Decision) error {
	if d.Hold != decide.Hold && d.Hold != decide.Release {
		return nil
	}
	holder, err := x.HolderFor(p.As)
	if err != nil {
		return err
	}
	switch d.Hold {
	case decide.Hold:
		if _, err := holder.Hold(ctx, p.Object, p.holdAnnotations(d.HeldSince)); err != nil {
			return err
		}
		if d.Action == decide.Keep {
			x.opts.Log.Info("held before evaluation", "record", p.Name, "object", p.object(), "why", d.Why)
		}
	case decide.Release:
		if err := holder.Release(ctx, p.Object); err != nil {
			return err
		}
		x.opts.Log.Info("hold released", "record", p.Name, "object", p.object(), "why", d.Why)
	}
	return nil
}

// HolderFor returns the Holder whose holds and releases go out as user;
// "" is reflux's own identity.
func (x *Executor) HolderFor(user string) (Holder, error) {
	if user == "" || x.opts.Impersonation == nil {
		return x.opts.Holder, nil
	}
	h, err := x.opts.Impersonation.Holder(user)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", user, err)
	}
	return h, nil
}

// requestReconcile asks Flux to reconcile now, so a dismissed drift's Git
// value is restored without waiting an interval: the HelmRelease whose
// release rendered the object (helm-controller corrects drift at a
// reconcile), else the governing Kustomization; nothing when neither is
// known.
func (x *Executor) requestReconcile(ctx context.Context, p *Plan) error {
	var obj client.Object
	switch {
	case p.HelmRelease != nil:
		hr := &helmv2.HelmRelease{}
		hr.Namespace, hr.Name = p.HelmRelease.Namespace, p.HelmRelease.Name
		obj = hr
	case p.Kustomization != nil:
		ks := &kustomizev1.Kustomization{}
		ks.Namespace, ks.Name = p.Kustomization.Namespace, p.Kustomization.Name
		obj = ks
	default:
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	obj.SetAnnotations(map[string]string{meta.ReconcileRequestAnnotation: x.opts.Now().UTC().Format(time.RFC3339Nano)})
	if err := x.opts.Client.Patch(ctx, obj, client.MergeFrom(base), client.FieldOwner(refluxv1.FieldManager)); err != nil {
		return fmt.Errorf("requesting reconcile of %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*helmv2.HelmRelease); ok {
		return helmv2.HelmReleaseKind
	}
	return kustomizev1.KustomizationKind
}

// finalize lets a deleted record go.
func (x *Executor) finalize(ctx context.Context, d *refluxv1.Drift) error {
	if !controllerutil.ContainsFinalizer(d, refluxv1.DriftFinalizer) {
		return nil
	}
	rec := d.DeepCopy()
	controllerutil.RemoveFinalizer(rec, refluxv1.DriftFinalizer)
	if err := x.opts.Client.Patch(ctx, rec, client.MergeFromWithOptions(d, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing finalizer of drift record %s: %w", rec.Name, err)
	}
	return nil
}

// Prehold holds the plan's object ahead of its evaluation, at: for the
// intake's hold lane, and for a Helm release's object, whose evaluation
// waits on Helm's storage and helm-controller's dry run. It holds only an
// object no record is about, and only while nobody decides for its record
// (the record's lock is free): a record, open or closed, is the live
// lane's to weigh, since a hold for it could undo a dismissal or hold a
// hotfix the policy leaves alone. It returns the object as the hold left
// it, nil when it held nothing.
func (x *Executor) Prehold(ctx context.Context, p *Plan, at time.Time) (*unstructured.Unstructured, error) {
	unlock, free := x.locks.tryLock(p.Namespace + "/" + p.Name)
	if !free {
		return nil, nil
	}
	defer unlock()
	rec, err := ReadRecord(ctx, x.opts.Client, p.Namespace, p.Name)
	if err != nil || rec != nil {
		return nil, err
	}
	holder, err := x.HolderFor(p.As)
	if err != nil {
		return nil, err
	}
	return holder.Hold(ctx, p.Object, p.holdAnnotations(at))
}
