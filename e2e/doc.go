// Package e2e holds whole-journey tests against a real kube-apiserver, the
// real Flux source-controller and kustomize-controller and a real git
// server, all started by internal/testenv. The tests pin down what Flux
// itself does to live objects, because reflux's drift engine is defined
// against that behaviour; docs/flux-behaviour.md summarises the findings.
// e2e/journey runs the installed reflux binary through a platform team's
// journeys; e2e/drift and e2e/livepath run reflux in-process as the same
// ServiceAccount.
package e2e
