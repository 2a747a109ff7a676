package testenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// PushOptions describes one commit that replaces a branch's whole tree.
type PushOptions struct {
	// Repo is the repository path on the server, e.g. "repo.git". It is
	// created when missing.
	Repo string
	// Branch defaults to DefaultBranch. A branch that does not exist yet
	// starts as an orphan.
	Branch string
	// Dir is the local tree to commit; the commit holds exactly its files.
	Dir string
	// Message defaults to "testenv: push <Dir>".
	Message string
}

// PushDir commits the tree under dir to repo's DefaultBranch over HTTP and
// returns the commit hash.
func (g *GitServer) PushDir(ctx context.Context, repo, dir string) (string, error) {
	return g.Push(ctx, PushOptions{Repo: repo, Dir: dir})
}

// Push commits opts.Dir as the whole tree of opts.Branch and pushes it over
// HTTP with basic auth, as a developer's push would arrive. It returns the
// commit hash.
func (g *GitServer) Push(ctx context.Context, opts PushOptions) (string, error) {
	if opts.Branch == "" {
		opts.Branch = DefaultBranch
	}
	if opts.Message == "" {
		opts.Message = "testenv: push " + filepath.Base(opts.Dir)
	}
	if err := g.ensureRepo(opts.Repo, opts.Branch); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "testenv-push-")
	if err != nil {
		return "", fmt.Errorf("creating push worktree: %w", err)
	}
	defer os.RemoveAll(work) //nolint:errcheck // scratch space
	repo, err := g.checkout(ctx, opts.Repo, opts.Branch, work)
	if err != nil {
		return "", err
	}
	hash, err := commitTree(repo, work, opts.Dir, opts.Message)
	if err != nil {
		return "", err
	}
	ref := plumbing.NewBranchReferenceName(opts.Branch)
	err = repo.PushContext(ctx, &gogit.PushOptions{
		RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:     g.basicAuth(),
	})
	if err != nil {
		return "", fmt.Errorf("pushing %s to %s: %w", opts.Branch, opts.Repo, err)
	}
	return hash.String(), nil
}

// Clone clones branch of repo over HTTP into dest, so a test can read what
// another writer (reflux's write-back) pushed.
func (g *GitServer) Clone(ctx context.Context, repo, branch, dest string) (*gogit.Repository, error) {
	r, err := gogit.PlainCloneContext(ctx, dest, false, &gogit.CloneOptions{
		URL:           g.HTTPURL(repo),
		Auth:          g.basicAuth(),
		ReferenceName: plumbing.NewBranchReferenceName(branch),
		SingleBranch:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("cloning %s@%s: %w", repo, branch, err)
	}
	return r, nil
}

func (g *GitServer) basicAuth() *githttp.BasicAuth {
	return &githttp.BasicAuth{Username: g.Username, Password: g.Password}
}

// ensureRepo creates the bare repository with HEAD on branch. Creating it
// here rather than through the server's auto-create keeps HEAD off the
// host's init.defaultBranch, so a clone without a ref gets branch.
func (g *GitServer) ensureRepo(repo, branch string) error {
	path := filepath.Join(g.Root(), repo)
	if _, err := os.Stat(filepath.Join(path, "objects")); err == nil {
		return nil
	}
	_, err := gogit.PlainInitWithOptions(path, &gogit.PlainInitOptions{
		Bare:        true,
		InitOptions: gogit.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)},
	})
	if err != nil {
		return fmt.Errorf("creating repository %s: %w", repo, err)
	}
	return nil
}

// checkout clones branch into work, or starts an empty repository there
// when the branch (or the whole repository) has no commits yet.
func (g *GitServer) checkout(ctx context.Context, repo, branch, work string) (*gogit.Repository, error) {
	r, err := g.Clone(ctx, repo, branch, work)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, transport.ErrEmptyRemoteRepository) && !errors.Is(err, gogit.NoMatchingRefSpecError{}) {
		return nil, err
	}
	if err := os.RemoveAll(work); err != nil {
		return nil, fmt.Errorf("clearing failed clone: %w", err)
	}
	r, err = gogit.PlainInitWithOptions(work, &gogit.PlainInitOptions{
		InitOptions: gogit.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)},
	})
	if err != nil {
		return nil, fmt.Errorf("initialising worktree: %w", err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{g.HTTPURL(repo)}}); err != nil {
		return nil, fmt.Errorf("adding remote: %w", err)
	}
	return r, nil
}

// commitTree replaces the worktree's files with those under src and commits
// them, deletions included.
func commitTree(repo *gogit.Repository, work, src, message string) (plumbing.Hash, error) {
	entries, err := os.ReadDir(work)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading worktree: %w", err)
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(work, e.Name())); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("clearing worktree: %w", err)
		}
	}
	if err := copyTree(src, work); err != nil {
		return plumbing.ZeroHash, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("opening worktree: %w", err)
	}
	if err := wt.AddWithOptions(&gogit.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("staging %s: %w", src, err)
	}
	sig := &object.Signature{Name: "testenv", Email: "testenv@reflux.invalid", When: time.Now()}
	hash, err := wt.Commit(message, &gogit.CommitOptions{Author: sig, AllowEmptyCommits: true})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("committing %s: %w", src, err)
	}
	return hash, nil
}

// copyTree copies the regular files under src into dst, keeping the layout.
func copyTree(src, dst string) error {
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}
