package forge

import (
	"context"

	"github.com/fluxcd/go-git-providers/gitprovider"
)

// providerRepo is the part of a backend go-git-providers covers the same
// way on every forge: reaching the repository and opening a pull request.
// What its interface lacks (labels, reviewers, drafts, listing by head)
// each backend does with the forge's own client.
type providerRepo struct {
	ggp gitprovider.Client
	ref gitprovider.OrgRepositoryRef
}

func (p providerRepo) check(ctx context.Context) error {
	_, err := p.ggp.OrgRepositories().Get(ctx, p.ref)
	return err
}

// open creates a pull request with go-git-providers' own Create.
func (p providerRepo) open(ctx context.Context, title, head, base, body string) (*PullRequest, error) {
	repo, err := p.ggp.OrgRepositories().Get(ctx, p.ref)
	if err != nil {
		return nil, err
	}
	pr, err := repo.PullRequests().Create(ctx, title, head, base, body)
	if err != nil {
		return nil, err
	}
	info := pr.Get()
	return &PullRequest{Number: info.Number, URL: info.WebURL, State: Open, Title: title, Body: body}, nil
}
