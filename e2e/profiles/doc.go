// Package profiles runs the real reflux binary under each least-privilege
// profile of config/profiles, installed as `kubectl apply -k` would install
// it and connected as the profile's own ServiceAccount, against a real
// kube-apiserver, the real Flux controllers and a real git server. Each
// test shows that reflux does its job under that RBAC, and nothing more:
// what the ServiceAccount may not do is asked of the apiserver
// (SelfSubjectAccessReview), and the effects reflux must not have (a hold,
// a git session, a forbidden request in its log) are checked to be absent.
package profiles
