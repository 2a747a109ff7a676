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
// # In-process comparison
//
// The dry run needs the `patch` verb on every object it asks about, which a
// read-only identity does not have. WithInProcessComparison (reflux's
// --comparison=in-process) computes the dry run's answer without asking:
// the apiserver's own field manager (k8s.io/apimachinery's managedfields,
// the code every server-side apply runs) merges the same prepared object
// into the live one as Flux's field owner with forced ownership, typed by
// the cluster's OpenAPI v3 schema (OpenAPITypes, one document per
// group-version, readable by every authenticated user). Everything after
// the merge (normalisation, comparison, ownership) is the dry-run path's.
//
// The apiserver does more than merge, and what it does besides is not seen:
//
//   - Defaulting (k8s.io/kubernetes defaulters, CRD schema defaults) only
//     fills fields the merge creates; live already carries defaults for
//     what it has. A field Git declares inside an element live lacks is
//     compared without its server defaults.
//   - Mutating admission (webhooks, MutatingAdmissionPolicies) and its
//     defaulting webhooks never run: a field one of them would rewrite on
//     Flux's apply reads as Flux's value.
//   - Validation never runs, so an immutable-field change is never
//     refused: Immutable and Recreate stay false and the fields are
//     reported as Flux would revert them (TestDetectImmutable is the case
//     skipped by name for this).
//   - There is no resourceVersion precondition: the merge is over exactly
//     the live object given, so ErrStale is never returned.
//
// Every detection test (TestDetect, TestFluxRevertsWhatDetectPredicts and
// the annotation, ignore, writer and pointer tests) checks that the
// in-process result equals the dry run's, field for field, and so does
// e2e/faithful's TestInProcessAgreesOnCorpus for every object of every
// corpus case Flux applied.
//
// TestFluxRevertsWhatDetectPredicts holds FluxReverts to Flux's own apply
// code (fluxcd/pkg/ssa configured as kustomize-controller configures it).
package drift
