// Package git holds the types and errors of reflux's Git access, and
// builds authentication from a Flux GitRepository-style Secret.
//
// The layering follows fluxcd/pkg/git: this package has no behaviour of its
// own, repository declares the Client interface the write-back engine
// depends on, and gogit implements it with go-git. Authentication reuses
// fluxcd/pkg/git's AuthOptions so a Secret that works for source-controller
// works here unchanged.
package git
