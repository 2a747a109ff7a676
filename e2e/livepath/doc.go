// Package livepath proves the live-path rule end to end, against a real
// kube-apiserver, the real Flux source-controller and kustomize-controller
// and a real git server (issue 8): live edits made while Flux rolls out a
// large tree are held before Flux reaches them and recorded once the
// render is current; a git server that accepts connections and never
// answers stalls only write-back; a branch a reviewer deletes right after
// the push dismisses its records and is never pushed again; and two shards
// each govern only their own Kustomizations.
package livepath
