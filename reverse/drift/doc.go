// Package drift finds the live drift of one object exactly as Flux's
// kustomize-controller v1.9.6 sees it, and says, field by field, whether
// Flux would revert it and who made it.
//
// A Detector asks the apiserver one question per call: a server-side
// dry-run apply of the rendered object as Flux's field owner with forced
// ownership, the same request kustomize-controller makes before it applies.
// The request is conditioned on the live object's resourceVersion, so the
// answer is about exactly the object the caller holds (ErrStale otherwise).
// Everything else comes from that live object (from the caller's watch
// event) and from the managedFields of both objects:
//
//   - Fields Git declares and live changed or lacks come from comparing the
//     live object with the dry-run result, normalised as Flux normalises it.
//     Flux applies with forced ownership, so it reverts all of them. A
//     change only allow-listed managers wrote is not drift (the HPA scaling
//     replicas Git declares, Flux itself).
//   - Fields live has and Git does not declare come from managedFields: the
//     dry-run result says what Flux declares, and the live entries say who
//     owns the rest. Flux strips kubectl-like managers before it applies
//     (ssa.ApplyCleanupOptions.FieldManagers), so their additions are
//     reverted; additions by any other manager survive Flux, and additions by
//     allow-listed managers (the HPA, the kubelet, reflux itself) are not
//     drift at all.
//
// Pointers number list elements as the live object does, pairing keyed
// elements (containers, env, ports) by key rather than by index, so a list
// reordered live is not drift in every element.
//
// Flux's per-object annotations (kustomize.toolkit.fluxcd.io/ssa,
// /reconcile, /force) and spec.ignore paths are honoured as Flux honours
// them, and Secret values are masked the way Flux's jsondiff masks them, so
// they never reach a drift record.
//
// TestFluxRevertsWhatDetectPredicts holds FluxReverts to Flux's own apply
// code (fluxcd/pkg/ssa configured as kustomize-controller configures it).
package drift
