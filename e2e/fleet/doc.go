// Package fleet holds the hub-and-spoke journeys (issue 24): a hub runs
// Flux and reflux, and a spoke, another kube-apiserver with its own etcd,
// is where Flux applies a Kustomization through spec.kubeConfig.
package fleet
