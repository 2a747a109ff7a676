// Command demo is `make demo`: it brings up a disposable GitOps cluster on
// loopback and runs reflux against it, so a newcomer can try a 2 AM
// `kubectl edit` and watch what reflux does with it.
//
// The environment is internal/testenv, the same one the e2e tests use:
// etcd and kube-apiserver, the real Flux source-controller and
// kustomize-controller, and a git server over HTTP and SSH. The demo
// pushes an embedded sample app (app/) to the git server, has Flux apply
// it from a GitRepository and an opted-in Kustomization, creates a
// ReverseSyncPolicy with a freshly generated OpenPGP signing key, and runs
// bin/reflux as `reflux manager`, as a cluster would run the image, with
// the apiserver's audit webhook pointed at it.
//
// The demo is a list of steps (see steps.go). Setup steps build the
// environment; scenario steps (scenario.go) act on it. With
// --exit-after-setup, or DEMO_EXIT=1, it prints the summary and exits
// instead of waiting for Ctrl-C. Everything it starts is stopped, and
// everything it writes is removed, when it ends.
package main
