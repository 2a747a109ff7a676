// Package postrender applies a Flux HelmRelease's kustomize
// post-renderers (spec.postRenderers[].kustomize) to the objects a chart
// renders, as helm-controller v1.6.2 does before it installs them, and
// finds which of them sets a field (issue 19): offline, reflux traces and
// diffs what helm-controller would deploy, not the chart's bare render.
//
// # Applying
//
// Apply runs the post-renderers in order, each as one kustomize build
// over an in-memory filesystem: the objects are its one resource file,
// the post-renderer's patches and images its kustomization's
// (helm-controller's internal/postrender.Kustomize). The build goes
// through fluxcd/pkg/kustomize.Build, with helm-controller's krusty
// options (no load restrictions, builtin plugins only) and the process's
// one kustomize mutex (kustomize issue 3659). Hooks go through as Helm 4
// sends them (spec.postRenderStrategy): with the other objects
// (combined, the default), in a build of their own (separate), or not at
// all (nohooks). helm-controller's own renderers after these, of
// spec.commonMetadata and its origin labels, are not applied: they set
// labels and annotations no chart field or patch line is behind.
//
// Each object carries an annotation through the builds, so an object a
// patch renames is still known by the chart's object it was made from.
//
// # Finding
//
// Find names the post-renderer entry that sets a field of an object as
// post-rendered: the last one to apply (later post-renderers run later;
// within one, kustomize applies images after patches, patches in order).
// A patch sets a field when its target selects the object, as kustomize
// selects (names and namespaces are regular expressions), or, without a
// target, when a strategic-merge patch names it; a JSON6902 add or
// replace of the field or of a map above it sets it, and so does a
// strategic-merge patch that holds it, its list elements matched by name
// as the merge matches them. An image entry sets an image of a container
// or init container whose name is the entry's new name (or its name).
package postrender
