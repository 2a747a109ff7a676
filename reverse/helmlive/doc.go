// Package helmlive is the live path of the objects Flux deploys through
// Helm (issue 19 §2–§4): a HelmRelease applied by a governed Kustomization
// is governed by the same ReverseSyncPolicy, unless it carries
// reflux.dev/reverse-sync: disabled, and the objects helm-controller
// renders from it are watched live as the Kustomization's own are.
//
// A change to such an object is queued, keyed by object, and a worker
// walks it: the HelmRelease from the object's helm.toolkit.fluxcd.io
// labels, the release helm-controller last made (reverse/release, read
// once per release version and kept), a dry run as helm-controller
// (release.Detector), then the same classification (reverse/observe) and
// decision (reverse/decide) as a Kustomization's object, written by the
// engine's one executor. Nothing on the way renders a chart or touches
// Git: the release's manifest is what helm-controller applied, so every
// change is evaluated at once, and there is nothing to park.
//
// An edit helm-controller would revert (drift correction enabled) is held
// with helm.toolkit.fluxcd.io/driftDetection: disabled under reflux's
// field manager, which docs/flux-behaviour.md proves keeps it through
// helm-controller's reconciles. The record names the HelmRelease and the
// Helm release (spec.helmRelease) beside the Kustomization that applies
// the HelmRelease, whose policy classified it. A dismissal releases the
// hold and asks helm-controller to reconcile, which corrects the drift.
//
// Each field's origin is the values key behind it (reverse/chart, which
// renders the chart with Helm's engine) and the line of the HelmRelease's
// spec.values that sets the key, in the render of the Kustomization that
// applies it. Finding a key renders the chart, so a walk never waits for
// it: it takes what the mapper (origins.go) has found for the release,
// asks for the rest, and the mapper brings the object back to the queue
// once found, so the record is filled in after it was written. The
// mapper keeps each chart's analysis by chart digest and values hash
// (chart.Cache), not by release version: a new release of the same chart
// and values finds its keys without rendering the chart again.
//
// An object of the release that someone but Helm deletes is drift of the
// whole object, recorded with who deleted it (the audit log) at the
// HelmRelease's line in Git and the chart's template (deletion.go). Helm
// deletes objects itself at an upgrade, a rollback and an uninstall; its
// storage says when one is under way (release.Settled), and such a
// deletion is no record.
//
// A field the release holds otherwise than the chart alone renders it,
// where the HelmRelease has post-renderers, traces to the line of the
// patch that sets it (postrender.go), or is refused as post-renderer:
// no values key changes it.
//
// Not yet here (issue 19): remote clusters (a HelmRelease's
// spec.kubeConfig).
package helmlive
