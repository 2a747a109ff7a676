// Package install tests installing reflux the way Flux users install
// everything (issue 23 §1): a GitRepository following a tag of reflux's
// own config/, and a Flux Kustomization of config/default with prune and
// wait. kustomize-controller applies it, reflux runs as the
// ServiceAccount Flux created, governs an app and its own install, is
// upgraded by a new tag, and is uninstalled by pruning.
package install
