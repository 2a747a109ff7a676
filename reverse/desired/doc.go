// Package desired renders what Flux applies for a Kustomization: it fetches
// the source's artifact, builds it with kustomize/ exactly as
// kustomize-controller does, stamps Flux's owner labels, and indexes each
// field's origin from the same build.
//
// A Renderer runs builds on its own bounded set of goroutines and keeps the
// latest renders of each Kustomization. Want never waits for a build. It
// renders the source's revision as soon as the source serves it, never
// cancels a build for a newer revision (the newest waits and is built
// next, those in between are skipped), and builds a revision once. A build
// of a large tree takes minutes (kustomize's namespace transformer is
// quadratic), which is why nothing on reflux's live path may wait for one.
//
// A revision's Manifest, the digest of every file of its tree, is taken
// before its build, so Render.Reusable can tell at once which objects a
// newer revision leaves as an older render describes them.
package desired
