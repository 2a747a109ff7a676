package git

import (
	"time"

	"github.com/fluxcd/pkg/git/signature"
)

// Ref is a remote branch and the commit it points at.
type Ref struct {
	// Name is the short branch name, e.g. "reflux/apps-web/0123456789ab".
	Name string
	// Hash is the full commit hash.
	Hash string
}

// Signature identifies an author or committer.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

// Commit is what the engine needs to know about a commit.
type Commit struct {
	Hash      string
	Parents   []string
	Author    Signature
	Committer Signature
	Message   string
	// Signed is true when the commit carries a signature of any kind.
	Signed bool
}

// CommitRequest asks for a commit of Paths on top of the checked-out commit.
type CommitRequest struct {
	// Paths are worktree-relative paths to stage; a missing file stages its
	// deletion. Nothing outside Paths is committed.
	Paths []string
	// Message is the full commit message.
	Message string
	// Author is used as author and committer.
	Author Signature
	// Signer signs the commit; nil means unsigned.
	Signer signature.Signer
}

// PushRequest asks to point a remote branch at a local commit.
type PushRequest struct {
	// Branch is the short remote branch name.
	Branch string
	// Hash is the local commit to push.
	Hash string
	// Lease is the commit the remote branch must point at for the push to
	// go through; empty means the branch must not exist yet.
	Lease string
	// Force allows a non-fast-forward update, still guarded by Lease.
	Force bool
}
