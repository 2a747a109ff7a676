// Command demo is `make demo`: it brings up a disposable GitOps cluster on
// loopback and runs reflux against it, so a newcomer can try a 2 AM
// `kubectl edit` and watch what reflux does with it.
//
// The environment is internal/testenv, the same one the e2e tests use:
// etcd and kube-apiserver, the real Flux source-controller and
// kustomize-controller, and a real Gitea (built by `make testbin`). The
// demo pushes an embedded sample app (app/) to Gitea, has Flux apply it
// from a GitRepository (over HTTP, with a basic-auth Secret) and an
// opted-in Kustomization, creates a ReverseSyncPolicy with a freshly
// generated OpenPGP signing key (registered with Gitea) and
// spec.git.pullRequest pointing at Gitea, and runs bin/reflux as `reflux
// manager`, as a cluster would run the image, with the apiserver's audit
// webhook pointed at it.
//
// The demo is a list of steps (see steps.go). Setup steps build the
// environment; scenario steps (scenario*.go) act on it as a 2 AM hotfix
// would: a person edits the feature flags and the replicas, reflux records
// and holds both, Flux's reconcile leaves them alone, and reflux pushes
// signed branches and opens a pull request for each; the demo clones,
// diffs and verifies the flag's branch with git and gpg, asks Gitea for
// its verdict on the signature, then merges the flag's pull request in
// Gitea and waits for reflux to resolve the record. By default the demo
// then waits for Ctrl-C so the environment can be
// explored. --exit-after-scenario (DEMO_EXIT=1) exits after the scenario
// instead, a smoke check of the whole journey; --exit-after-setup
// (DEMO_EXIT=setup) exits after the summary. Everything it starts is
// stopped, and everything it writes is removed, when it ends.
package main
