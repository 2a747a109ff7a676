// Package tenancy makes reflux act as kustomize-controller acts in a
// multi-tenant cluster (Flux's multi-tenancy lockdown).
//
// kustomize-controller applies a Kustomization's objects as the
// ServiceAccount named in its spec.serviceAccountName, in the
// Kustomization's namespace, or as --default-service-account when the spec
// names none; with --no-cross-namespace-refs it refuses a sourceRef into
// another namespace. reflux's writes to live objects are the dry-run apply
// that detects drift, the hold and its release, and they go out as the
// same identity: a tenant's Kustomization cannot make reflux touch, or
// even look at through a dry run, what the tenant itself may not.
// Watches and reads stay reflux's own: they do not act on objects.
//
// The decisions are pure (Identity, CheckSourceRef, AsForbidden); Clients
// keeps one impersonating client per identity. It is built from the
// manager's rest.Config and RESTMapper, which is why it is not fluxcd/pkg's
// runtime/client.Impersonator: that one reads the process's kubeconfig
// (config.GetConfig) rather than the manager's, and builds a discovery
// RESTMapper per client, a round of API requests the live path would wait
// on. Building a Clients entry makes no request.
package tenancy
