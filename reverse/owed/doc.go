// Package owed retries the releases of holds no record owns: the holds
// taken before evaluation (a change parked while its render was not
// current) for a Kustomization reflux stopped governing.
//
// governor.Forget hands each such hold here rather than releasing it
// inline: a release refused (RBAC, a webhook, a timeout), or an identity
// whose client cannot be built, used to leave the hold in place with a
// log line, and nothing asked again (issue 22 §3). A stuck hold keeps
// Flux off the object, so each is retried with backoff until it is
// released or a record owns it, and every failure is logged with the
// kubectl command that lifts it by hand.
//
// A hold is released as the identity that took it (the Kustomization's
// ServiceAccount, as kustomize-controller impersonates it), never as
// reflux itself.
package owed
