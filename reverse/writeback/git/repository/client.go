package repository

import (
	"context"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// Client works on one local clone of one remote repository. The remote is
// the truth: Fetch refreshes what the other methods read about branches.
// A Client is not safe for concurrent use; the engine serialises writers
// per repository.
type Client interface {
	// Path returns the worktree directory.
	Path() string
	// Fetch updates the remote branches whose names start with one of
	// prefixes (every branch when none are given), pruning deleted ones.
	// A branch name is its own prefix; fetching "main" also brings
	// "main-old", which is harmless and, unlike an exact refspec, does not
	// fail when the branch is missing.
	Fetch(ctx context.Context, prefixes ...string) error
	// Branch returns a remote branch as of the last Fetch, or
	// git.ErrBranchNotFound.
	Branch(name string) (git.Ref, error)
	// Branches lists remote branches under prefix as of the last Fetch.
	Branches(prefix string) ([]git.Ref, error)
	// Checkout resets the worktree to commit, dropping local changes and
	// untracked files.
	Checkout(commit string) error
	// Commit commits req.Paths on top of the checked-out commit and returns
	// its hash, or git.ErrNoChanges.
	Commit(req git.CommitRequest) (string, error)
	// Push updates a remote branch; see git.PushRequest.
	Push(ctx context.Context, req git.PushRequest) error
	// Delete removes a remote branch if it still points at lease.
	Delete(ctx context.Context, branch, lease string) error
	// CommitInfo returns what the engine needs about one commit.
	CommitInfo(hash string) (git.Commit, error)
	// IsAncestor reports whether ancestor is reachable from descendant.
	IsAncestor(ancestor, descendant string) (bool, error)
	// MergeBase returns the best common ancestor of a and b, or "".
	MergeBase(a, b string) (string, error)
	// Diff lists the paths whose content differs between two commits.
	Diff(from, to string) ([]string, error)
	// FileHash returns the blob hash of path in commit, or "" when absent.
	FileHash(commit, path string) (string, error)
	// FileContent returns the content of path in commit, and false when
	// no file is there (a directory counts as none). A symlink or a
	// submodule yields git.ErrNotRegularFile: the engine only carries
	// regular files between commits.
	FileContent(commit, path string) ([]byte, bool, error)
	// Close releases open files; the clone stays on disk for the next run.
	Close()
}
