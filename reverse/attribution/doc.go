// Package attribution names who made a live change, from the
// kube-apiserver's audit log (internal/audit's store): the user behind a
// field manager, who deleted an object, and which writes of a Secret reflux
// may not read were made by a person rather than by Flux.
//
// It is the engine's governor.Attributor. managedFields name a field
// manager ("kubectl-patch"), never a user; only the audit log does. Flux
// is recognised by its ServiceAccount, never by a user agent any client
// can send. The store is a library at the bottom floor and knows nothing
// of the engine; this package translates between the two.
package attribution
