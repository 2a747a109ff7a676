// Package source reads a Kustomization's Flux source from the cluster, the
// way Flux's own controllers read it: the artifact and the substituteFrom
// data a render is built from (kustomize-controller), and the Git
// repository, its credentials and the policy's Secrets that write-back
// needs (as image-automation-controller resolves its GitRepository).
//
// It is the one package under reverse/ that reads sources and Secrets, so
// that rendering (desired), the engine (governor) and write-back stay free
// of those reads. The Kustomization reconciler and `reflux trace` share
// Resolve, so that trace builds exactly what reflux and kustomize-controller
// build; the engine gets Targets through its governor.Targets interface.
package source
