package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// PushDir commits the tree under dir as the whole of repo's main branch,
// creating the repository when it does not exist yet, and returns the
// clone URL and the commit.
func (g *Gitea) PushDir(ctx context.Context, repo, dir string) (url, commit string, err error) {
	url = g.URL + "/" + g.Username + "/" + repo + ".git"
	var exists struct {
		Empty bool `json:"empty"`
	}
	if err := g.API(ctx, "GET", "/repos/"+g.Username+"/"+repo, nil, &exists); err != nil {
		if _, err := g.CreateRepo(ctx, repo); err != nil {
			return "", "", fmt.Errorf("creating gitea repository %s: %w", repo, err)
		}
		exists.Empty = true
	}
	work, err := os.MkdirTemp("", "testenv-gitea-push-")
	if err != nil {
		return "", "", fmt.Errorf("creating push worktree: %w", err)
	}
	defer os.RemoveAll(work) //nolint:errcheck // scratch space
	r, err := g.checkout(ctx, url, work, exists.Empty)
	if err != nil {
		return "", "", err
	}
	hash, err := commitTree(r, work, dir, "testenv: push "+repo)
	if err != nil {
		return "", "", err
	}
	err = r.PushContext(ctx, &gogit.PushOptions{Auth: g.BasicAuth(),
		RefSpecs: []config.RefSpec{config.RefSpec("+" + hash.String() + ":refs/heads/" + DefaultBranch)}})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return "", "", fmt.Errorf("pushing to %s: %w", url, err)
	}
	return url, hash.String(), nil
}

// BasicAuth is the admin user's git credentials.
func (g *Gitea) BasicAuth() *githttp.BasicAuth {
	return &githttp.BasicAuth{Username: g.Username, Password: g.Password}
}

func (g *Gitea) checkout(ctx context.Context, url, work string, empty bool) (*gogit.Repository, error) {
	if !empty {
		r, err := gogit.PlainCloneContext(ctx, work, false, &gogit.CloneOptions{URL: url, Auth: g.BasicAuth(),
			ReferenceName: plumbing.NewBranchReferenceName(DefaultBranch), SingleBranch: true})
		if err != nil {
			return nil, fmt.Errorf("cloning %s: %w", url, err)
		}
		return r, nil
	}
	r, err := gogit.PlainInitWithOptions(work, &gogit.PlainInitOptions{
		InitOptions: gogit.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(DefaultBranch)},
	})
	if err != nil {
		return nil, fmt.Errorf("initialising worktree: %w", err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		return nil, fmt.Errorf("adding remote: %w", err)
	}
	return r, nil
}
