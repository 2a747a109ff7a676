package git

import "errors"

var (
	// ErrBranchNotFound is returned when a branch does not exist remotely.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrNoChanges is returned when a commit would not change the tree.
	ErrNoChanges = errors.New("no changes to commit")
	// ErrPushRejected is returned when the remote refused an update: the
	// branch moved since it was read, or a hook said no.
	ErrPushRejected = errors.New("push rejected")
	// ErrInvalidPath is returned for paths that leave the worktree or
	// touch the .git directory.
	ErrInvalidPath = errors.New("invalid worktree path")
	// ErrNotRegularFile is returned when a path holds a symlink or a
	// submodule where the engine needs the content of a regular file.
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrInsecureTransport is returned when credentials would travel over
	// plain HTTP without the caller allowing it.
	ErrInsecureTransport = errors.New("refusing to send credentials over plain HTTP")
)
