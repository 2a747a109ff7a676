// Package e2e holds whole-journey tests against a real kube-apiserver, the
// real Flux source-controller and kustomize-controller and a real git
// server, all started by internal/testenv. The tests pin down what Flux
// itself does to live objects, because reflux's drift engine is defined
// against that behaviour; docs/flux-behaviour.md summarises the findings.
// Every package shares one harness, e2e/internal/fixture: one TestMain,
// one way to start reflux (the real binary, as the ServiceAccount
// config/default installs), one way to write a tree and wait for a record.
package e2e
