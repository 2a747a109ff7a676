// Package drift holds the drift engine's end-to-end tests: reflux running
// against a real kube-apiserver, the real Flux source-controller and
// kustomize-controller, and a real git server, with the apiserver's audit
// webhook pointed at reflux.
package drift
