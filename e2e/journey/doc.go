// Package journey proves reflux as a platform team meets it (issue 9): the
// real bin/reflux, installed from config/default and running as its
// ServiceAccount under config/rbac, driven only through Kubernetes objects,
// kubectl and git, against the real apiserver, Flux controllers and git
// server. Tests assert what a user would look at: conditions, events (as
// Kubernetes Events and as notification-controller receives them on
// --events-addr), /metrics scraped over HTTP, and the branches' files and
// signatures.
//
// One environment and one reflux serve the scenarios, each in its own
// namespace and repository so they run in parallel. The scenarios that kill
// reflux (restart, failover) run their own reflux processes on a shard of
// their own (--watch-label-selector), so killing them leaves the others'
// reflux alone.
package journey
