// Package release finds the live drift of the objects a Flux HelmRelease
// deployed, as helm-controller v1.6.2's own drift detection finds it, and
// says, object by object and field by field, whether helm-controller
// would revert it (issue 19 §3). It is reverse/drift's counterpart for
// Helm: its fields are reverse/drift's Field, so the engine records both
// alike.
//
// The steps, each a function the engine calls in turn:
//
//   - Latest names the release helm-controller last installed or upgraded:
//     the latest snapshot of status.history, stored in
//     status.storageNamespace (or spec.storageNamespace, or the
//     HelmRelease's namespace, before helm-controller stored anything).
//     That snapshot is what helm-controller diffs against.
//   - Load reads it through Helm's own storage, the Secrets driver
//     helm-controller configures, over a one-Secret read (SecretGetter);
//     nothing here can write Helm's storage. A missing or unreadable
//     release is ErrReleaseNotFound or ErrReleaseUndecodable, so the
//     engine can name the condition.
//   - Desired splits its manifest as helm-controller's action.Diff does
//     (fluxcd/pkg/ssa/utils.ReadObjects), normalises the objects with the
//     scheme its diff client has, sets the labels and annotations Helm sets
//     on what it installs, and gives namespaced objects without a namespace
//     the release namespace, asking the apiserver's RESTMapper (Scoper)
//     which kinds are namespaced. Cluster-scoped objects get none.
//   - Detector.Detect, or DetectAll for a whole release, makes
//     helm-controller's request: a server-side apply of the desired object,
//     dry run, as field manager helm-controller with forced ownership, and
//     compares the result with the live object as fluxcd/pkg/ssa/jsondiff
//     does for helm-controller: ignore-rule paths removed from both sides,
//     labels and annotations compared only where the chart sets them, the
//     rest without metadata and status.
//
// # Why the results are helm-controller's
//
// A field only another manager owns, like a ConfigMap key someone added,
// comes back from the forced dry run unchanged, so it is never drift: a
// live edit that only adds is permanent under Helm. Whoever changed a
// field the chart renders, the dry run takes it back, so that is drift;
// managedFields only name the writer (Field.Modifier).
//
// helm-controller builds its patch with jsondiff's Rationalize option,
// which replaces a small map or list whole when that is shorter than the
// changes inside it. Result.Counts are its counts of that patch, and
// Drift.Message is its DriftDetected message, word for word. Result.Fields
// come from the same comparison without the folding, one leaf each, so
// that every field can be taken to Git; where nothing is folded they are
// the patch operation for operation. jsondiff pairs list elements by
// index; fields of a list's tail are numbered as live (or, for elements
// live lacks, the desired object) numbers them.
//
// An object is excluded, as helm-controller excludes it, when the chart's
// object carries helm.toolkit.fluxcd.io/driftDetection: disabled (label or
// annotation), when an ignore rule names the whole object, or when the
// live object carries the key. One exception: reflux holds an object by
// writing that key under its own field manager, and an object excluded
// only by reflux's write (proven by managedFields) is still diffed, as
// HeldByReflux, or reflux would be blind to what it holds. An object the
// chart or anyone else excluded is skipped, and Result.Excluded says why.
//
// When helm-controller reverts (Result.RevertedAt, Field.FluxReverts):
// drift correction runs only in mode enabled, and applies the diff as a
// JSON patch at the next reconcile (a missing object is created again);
// an object reflux holds is corrected at the first reconcile after the
// hold is lifted. In warn and disabled modes nothing is corrected. An
// upgrade, whatever the mode and whatever is excluded, applies every
// object of the new manifest with forced ownership: every field here is
// reverted then, held or not. docs/flux-behaviour.md proves all of this
// against the real helm-controller.
//
// # What differs from helm-controller, on purpose
//
//   - The dry run is conditioned on the live object's resourceVersion, so
//     the answer is about exactly the live object compared with
//     (drift.ErrStale otherwise); helm-controller reads and applies
//     unconditioned.
//   - Secret values are masked in every field, with fluxcd/pkg/ssa's
//     MaskSecretPatchData plus a pass for the values it leaves when a whole
//     data map is replaced. helm-controller masks only what it logs.
//
// # Not modelled
//
//   - helm-controller's --override-manager (off by default), which
//     rewrites live managedFields before it diffs.
//   - The snapshot's digest check (VerifyReleaseObject) and the states in
//     which helm-controller upgrades, rolls back or unlocks instead of
//     detecting drift (out of sync, failed, pending): the release read is
//     the snapshot's, by name and version, and its name, namespace and
//     version are checked.
//
// TestWarnModeAgreesWithHelmController and
// TestEnabledModeRevertsWhatIsPredicted hold all of this to the real
// helm-controller v1.6.2 (internal/testenv): the same objects, the same
// counts, the same message, and exactly the predicted corrections.
package release
