// Package desired renders what Flux applied for a Kustomization: it fetches
// the source artifact of the applied revision, builds it with kustomize/
// exactly as kustomize-controller does, stamps Flux's owner labels, and
// indexes each field's origin. Renders are cached per Kustomization and
// revision, so live events never pay for a build.
package desired
