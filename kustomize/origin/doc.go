// Package origin maps every leaf field of a Flux-faithful kustomize render
// back to the file, line and column that declared its value, together with
// the chain of layers (base resource, patches, overlay transformers, Flux
// Kustomization spec, post-build substitution) that set or overrode it.
//
// The index is built from a model of the kustomization graph that this
// package walks itself with yaml.v3 nodes, so every scalar keeps its
// position. The model is then cross-checked, value for value, against the
// objects krusty really rendered (kustomize.Build). A field whose modelled
// value disagrees with the render, or that the model cannot produce at all
// (remote bases, Helm charts, plugins, hash suffixes, SOPS data, ...), is
// refused with a named Reason instead of being guessed.
package origin
