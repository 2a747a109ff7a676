package drift

import (
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The per-object annotations (or labels) kustomize-controller v1.9.6 reads,
// built in its `apply` step from its API group.
var (
	ssaKey       = kustomizev1.GroupVersion.Group + "/ssa"
	reconcileKey = kustomizev1.GroupVersion.Group + "/reconcile"
	forceKey     = kustomizev1.GroupVersion.Group + "/force"

	// ownerLabels are set on every object by ssa.SetOwnerLabels.
	ownerLabels = []string{
		kustomizev1.GroupVersion.Group + "/name",
		kustomizev1.GroupVersion.Group + "/namespace",
	}
)

// SkipReason says why Flux does not apply an object at all.
type SkipReason string

const (
	// SkipIgnore: Git marks the object kustomize.toolkit.fluxcd.io/ssa: Ignore.
	SkipIgnore SkipReason = "SSAIgnore"
	// SkipReconcileDisabled: Git marks the object
	// kustomize.toolkit.fluxcd.io/reconcile: disabled.
	SkipReconcileDisabled SkipReason = "ReconcileDisabled"
	// SkipIfNotPresent: Git marks the object
	// kustomize.toolkit.fluxcd.io/ssa: IfNotPresent and it exists.
	SkipIfNotPresent SkipReason = "SSAIfNotPresent"
	// SkipIgnoredRoot: an ignore path is the whole document ("").
	SkipIgnoredRoot SkipReason = "IgnoredRoot"
)

// bookkeeping lists metadata Flux's cleanup deletes before every apply:
// kubectl's last-applied annotation (which, for a Secret, holds its data in
// clear) and deprecated Flux v1 marks; and the requests `flux reconcile`
// writes on the Flux objects a Kustomization applies (a HelmRelease, a
// GitRepository), which ask a controller to act now and say nothing of
// the object's desired state. None of it is anyone's intent, so it is
// never drift.
var bookkeeping = map[string]bool{
	"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration": true,
	"/metadata/annotations/kustomize.toolkit.fluxcd.io~1checksum":             true,
	"/metadata/annotations/fluxcd.io~1sync-checksum":                          true,
	"/metadata/labels/fluxcd.io~1sync-gc-mark":                                true,
	annotationPointer(meta.ReconcileRequestAnnotation):                        true,
	annotationPointer(meta.ForceRequestAnnotation):                            true,
}

func annotationPointer(key string) string {
	return "/metadata/annotations/" + strings.ReplaceAll(key, "/", "~1")
}

// inMetadata reports whether the object has the key with the value, as a
// label or an annotation, case-insensitively, as ssa/utils.AnyInMetadata
// matches selectors.
func inMetadata(u *unstructured.Unstructured, key, value string) bool {
	if v := u.GetLabels()[key]; v != "" && strings.EqualFold(v, value) {
		return true
	}
	v := u.GetAnnotations()[key]
	return v != "" && strings.EqualFold(v, value)
}

// excluded reports why Flux's ExclusionSelector matches the object, if it
// does: reconcile: disabled or ssa: Ignore.
func excluded(u *unstructured.Unstructured) SkipReason {
	switch {
	case inMetadata(u, reconcileKey, kustomizev1.DisabledValue):
		return SkipReconcileDisabled
	case inMetadata(u, ssaKey, kustomizev1.IgnoreValue):
		return SkipIgnore
	}
	return ""
}

// desiredSkip reports why Flux skips applying desired over an existing
// object (ssa.ResourceManager.shouldSkipApply): an exclusion, or
// IfNotPresent, which Flux reads from the desired object only.
func desiredSkip(desired *unstructured.Unstructured) SkipReason {
	if r := excluded(desired); r != "" {
		return r
	}
	if inMetadata(desired, ssaKey, kustomizev1.IfNotPresentValue) {
		return SkipIfNotPresent
	}
	return ""
}

// DesiredSkip reports why Flux never applies desired over an existing
// object, "" when it does. Such an object may be in Flux's inventory
// (as skipped) without existing live.
func DesiredSkip(desired *unstructured.Unstructured) SkipReason { return desiredSkip(desired) }

// Unreverted reports whether Flux leaves the live object's other writers
// alone: it is excluded (reconcile: disabled, which is also reflux's
// hold, or ssa: Ignore) or merged (ssa: Merge), so a writer's entry in
// its managedFields is no sign of a change Flux will revert.
func Unreverted(live *unstructured.Unstructured) bool {
	return excluded(live) != "" || inMetadata(live, ssaKey, kustomizev1.MergeValue)
}

// merges reports whether Flux skips its managedFields cleanup for the
// object (ApplyCleanupOptions.Exclusions: ssa: Merge on either side), so
// that no manager's additions are reverted.
func merges(desired, live *unstructured.Unstructured) bool {
	return inMetadata(desired, ssaKey, kustomizev1.MergeValue) || inMetadata(live, ssaKey, kustomizev1.MergeValue)
}

// forced reports whether Flux recreates the object when an immutable field
// differs: spec.force or kustomize.toolkit.fluxcd.io/force: enabled on
// either side (ssa.ResourceManager.shouldForceApply).
func forced(force bool, desired, live *unstructured.Unstructured) bool {
	return force || inMetadata(desired, forceKey, kustomizev1.EnabledValue) || inMetadata(live, forceKey, kustomizev1.EnabledValue)
}
