// Package forge opens and follows the pull requests of reflux's branches
// on GitHub, GitLab and Gitea, through fluxcd/go-git-providers.
//
// go-git-providers creates, gets and edits the titles of pull requests,
// and returns only their number, URL and merged state. Everything else a
// reviewer needs (the body, labels added and removed, reviewers,
// assignees, draft state, comments, closing unmerged, and finding the pull
// request of a head branch in any state) goes through the provider's own
// client, reached with Raw(). A backend per provider hides that
// difference, so callers see one Client.
package forge
