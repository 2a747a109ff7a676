// Package sops encrypts Kubernetes Secrets with SOPS before reflux writes
// them back to Git, so a drifted Secret never lands in a repository in
// clear text.
//
// Only data and stringData are encrypted (encrypted_regex
// "^(data|stringData)$", as Flux's documentation recommends), which keeps
// metadata reviewable and lets kustomize-controller decrypt the file as
// usual. Recipients are age public keys and, optionally, armored OpenPGP
// public keys; with none, encryption is refused.
package sops
