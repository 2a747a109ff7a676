// Package desired renders what Flux applied for a Kustomization: it fetches
// the source artifact of the applied revision, builds it with kustomize/
// exactly as kustomize-controller does, stamps Flux's owner labels, and
// indexes each field's origin from the same build.
//
// A Renderer runs builds on its own bounded set of goroutines and keeps the
// latest render of each Kustomization: Want never waits for a build, a newer
// revision cancels an older one's build, and a revision is built once. A
// build of a large tree takes minutes (kustomize's namespace transformer is
// quadratic), which is why nothing on reflux's live path may wait for one.
package desired
