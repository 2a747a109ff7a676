package gogit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	extgogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// Checkout implements repository.Client.
func (c *Client) Checkout(commit string) error {
	wt, err := c.repo.Worktree()
	if err != nil {
		return fmt.Errorf("opening worktree: %w", err)
	}
	if err := wt.Checkout(&extgogit.CheckoutOptions{Hash: plumbing.NewHash(commit), Force: true}); err != nil {
		return fmt.Errorf("checking out %s: %w", commit, err)
	}
	// A previous Apply may have left files behind; they must not be seen
	// by the next one.
	if err := c.removeUntracked(); err != nil {
		return fmt.Errorf("cleaning worktree: %w", err)
	}
	return nil
}

// removeUntracked deletes files the index does not know. go-git's
// Worktree.Clean computes a full status for this, which took a third of a
// write-back on a 1,000-file repository; a walk against the index is
// enough because Checkout has just reset every tracked file.
func (c *Client) removeUntracked() error {
	idx, err := c.repo.Storer.Index()
	if err != nil {
		return err
	}
	tracked := make(map[string]bool, len(idx.Entries))
	for _, e := range idx.Entries {
		tracked[e.Name] = true
	}
	return filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(c.dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && (rel == extgogit.GitDirName || tracked[rel]):
			return filepath.SkipDir // .git, or a submodule's gitlink
		case d.IsDir() || tracked[rel]:
			return nil
		default:
			return os.Remove(p)
		}
	})
}

// Commit implements repository.Client.
func (c *Client) Commit(req git.CommitRequest) (string, error) {
	wt, err := c.repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("opening worktree: %w", err)
	}
	for _, p := range req.Paths {
		if err := c.stage(wt, p); err != nil {
			return "", err
		}
	}
	when := req.Author.When
	if when.IsZero() {
		when = time.Now()
	}
	sig := &object.Signature{Name: req.Author.Name, Email: req.Author.Email, When: when}
	h, err := wt.Commit(req.Message, &extgogit.CommitOptions{Author: sig, Committer: sig, Signer: req.Signer})
	if errors.Is(err, extgogit.ErrEmptyCommit) {
		return "", git.ErrNoChanges
	}
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	return h.String(), nil
}

// stage adds p, or stages its removal when the file is gone.
func (c *Client) stage(wt *extgogit.Worktree, p string) error {
	clean, err := cleanPath(p)
	if err != nil {
		return err
	}
	_, err = os.Lstat(filepath.Join(c.dir, clean))
	switch {
	case err == nil:
		if err := wt.AddWithOptions(&extgogit.AddOptions{Path: clean, SkipStatus: true}); err != nil {
			return fmt.Errorf("staging %s: %w", clean, err)
		}
	case errors.Is(err, os.ErrNotExist):
		if _, err := wt.Remove(clean); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
			return fmt.Errorf("staging removal of %s: %w", clean, err)
		}
	default:
		return fmt.Errorf("staging %s: %w", clean, err)
	}
	return nil
}

// cleanPath keeps edits inside the worktree and out of .git, whatever the
// Apply callback reports.
func cleanPath(p string) (string, error) {
	clean := filepath.ToSlash(filepath.Clean(p))
	if !filepath.IsLocal(clean) || clean == ".git" || strings.HasPrefix(clean, ".git/") {
		return "", fmt.Errorf("%w: %q", git.ErrInvalidPath, p)
	}
	return clean, nil
}
