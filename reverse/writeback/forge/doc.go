// Package forge opens and follows the pull requests of reflux's branches
// on GitHub, GitLab, Gitea, Bitbucket and Azure DevOps.
//
// On the first four (Bitbucket Server), fluxcd/go-git-providers creates,
// gets and edits the titles of pull requests, and returns only their
// number, URL and merged state. Everything else a reviewer needs (the
// body, labels added and removed, reviewers, assignees, draft state,
// comments, closing unmerged, and finding the pull request of a head
// branch in any state) goes through the provider's own client, reached
// with Raw(). go-git-providers covers neither Bitbucket Cloud, spoken
// over plain HTTP, nor Azure DevOps, spoken through
// github.com/microsoft/azure-devops-go-api. A backend per provider hides
// those differences, so callers see one Client.
package forge
