// Package gogit implements repository.Client with go-git, keeping one
// on-disk clone that later runs refresh with a fetch instead of cloning
// again.
//
// fluxcd/pkg/git/gogit is not used for the clone itself: its Client can
// only be populated by Clone or Init, so it cannot reopen a cached clone,
// it has no fetch, and its package init() rewrites go-git's global
// transport.UnsupportedCapabilities, which reflux should not do behind
// other packages' backs. Authentication still comes from fluxcd/pkg/git's
// AuthOptions and known_hosts checking from fluxcd/pkg/ssh/knownhosts.
package gogit
