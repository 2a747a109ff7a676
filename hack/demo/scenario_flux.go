package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// holdAnnotation is kustomize-controller's per-object opt-out, which
// reflux sets to hold an object.
const (
	holdAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"
	holdValue      = "disabled"
)

// reconcileFlux has kustomize-controller apply the Git revision again, as
// `flux reconcile kustomization` does, and checks that both edits are
// still live and that the hold reflux wrote is what kept them.
func (d *demo) reconcileFlux(ctx context.Context) error {
	if err := d.env.Reconcile(ctx, d.kustomization); err != nil {
		return err
	}
	ks := d.kustomization
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ready == nil {
		return fmt.Errorf("kustomization %s/%s has no Ready condition after the reconcile", ks.Namespace, ks.Name)
	}
	p := &printer{w: d.opts.out}
	p.line("    kustomize-controller reconciled %s/%s: Ready=%s, %s", ks.Namespace, ks.Name, ready.Status, ready.Message)

	cm := &corev1.ConfigMap{}
	if err := d.env.Client.Get(ctx, objectKey(flagsName), cm); err != nil {
		return fmt.Errorf("getting configmap/%s: %w", flagsName, err)
	}
	if got, ok := cm.Data[hotfixFlag]; !ok || got != hotfixValue {
		return fmt.Errorf("Flux reverted the flag: configmap/%s has %s=%q", flagsName, hotfixFlag, got)
	}
	if err := checkHeld(cm, "configmap/"+flagsName); err != nil {
		return err
	}
	p.line("      %-24s %-36s held: %s", "configmap/"+flagsName, fmt.Sprintf("still has %s: %q", hotfixFlag, hotfixValue), holdNote)

	dep := &appsv1.Deployment{}
	if err := d.env.Client.Get(ctx, objectKey(appName), dep); err != nil {
		return fmt.Errorf("getting deployment/%s: %w", appName, err)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != hotfixReplicas {
		return fmt.Errorf("Flux reverted the replicas: deployment/%s has %s", appName, replicasString(dep.Spec.Replicas))
	}
	if err := checkHeld(dep, "deployment/"+appName); err != nil {
		return err
	}
	p.line("      %-24s %-36s held: %s", "deployment/"+appName, fmt.Sprintf("still has replicas %d", hotfixReplicas), holdNote)
	return nil
}

// holdNote is how the step describes a verified hold.
const holdNote = holdAnnotation + "=" + holdValue + " by field manager " + refluxv1.FieldManager

// checkHeld reports whether obj, named ref, carries the hold annotation under
// reflux's field manager: a hold someone else wrote would not be reflux's
// doing, and reflux would not release it.
func checkHeld(obj client.Object, ref string) error {
	if v := obj.GetAnnotations()[holdAnnotation]; v != holdValue {
		return fmt.Errorf("%s is not held: annotation %s is %q", ref, holdAnnotation, v)
	}
	field := `"f:` + holdAnnotation + `"`
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == refluxv1.FieldManager && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), field) {
			return nil
		}
	}
	return fmt.Errorf("%s is held, but not by field manager %s", ref, refluxv1.FieldManager)
}

func replicasString(r *int32) string {
	if r == nil {
		return "no replicas"
	}
	return fmt.Sprintf("replicas %d", *r)
}
