// Package fleet governs Kustomizations that Flux applies to remote
// clusters through spec.kubeConfig, from the hub reflux runs in (issue
// 24). It connects to each remote cluster as kustomize-controller does,
// from the kubeconfig Secret the Kustomization names, and keeps one
// engine per kubeconfig, shared by every Kustomization that reaches the
// cluster with it (through one Secret or copies of it): one set of live
// watches, dry runs and holds in that cluster, with records, conditions
// and write-back staying in the hub.
//
// It probes each cluster, so that an unreachable one is reported rather
// than silently unwatched, and reads its kubeconfig again at every probe,
// so that a rotated Secret reconnects without a restart.
package fleet
