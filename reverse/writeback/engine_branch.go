package writeback

import (
	"errors"
	"fmt"
	"strings"

	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

// maxChain bounds the walk over a fix branch's own commits; reflux adds
// one commit per changed drift set, so a longer branch is not its own.
const maxChain = 64

// errLongChain means a branch has no common history with the source
// within maxChain commits.
var errLongChain = errors.New("branch has no common history with the source within the walk limit")

// found is what the remote says about reflux's branches for a request.
type found struct {
	// open is reflux's unmerged branch for this Kustomization and kind.
	open *git.Ref
	// chain lists open's commits that are not on the source branch,
	// newest first.
	chain []git.Commit
	// unwalkable means open, named by the request's fingerprint, has no
	// common history with the source within maxChain commits: it is not
	// recognisably reflux's, and its chain is unknown.
	unwalkable bool
	// staleLease is the head of an already-merged branch with the wanted
	// name, which a new push may fast-forward.
	staleLease string
}

// findOpen looks for reflux's open branch of the request's family: the
// branch with the current fingerprint if it exists, else the most recently
// committed one whose commits name the same Kustomization.
func (e *Engine) findOpen(c repository.Client, req Request, name, src string) (found, error) {
	family, err := branch.Family(req.spec())
	if err != nil {
		return found{}, err
	}
	refs, err := c.Branches(family)
	if err != nil {
		return found{}, err
	}
	var best found
	var bestWhen int64
	for _, ref := range refs {
		info, err := branch.Parse(req.BranchPrefix, ref.Name)
		if err != nil || info.NeedsDecision != (req.Kind == KindAlert) {
			continue
		}
		merged, err := c.IsAncestor(ref.Hash, src)
		if err != nil {
			return found{}, err
		}
		if merged {
			if ref.Name == name {
				best.staleLease = ref.Hash
			}
			continue
		}
		chain, err := ownChain(c, ref.Hash, src)
		unwalkable := errors.Is(err, errLongChain)
		if unwalkable && ref.Name != name {
			continue
		}
		if err != nil && !unwalkable {
			return found{}, err
		}
		if ref.Name != name && !namesKustomization(chain, req.Kustomization) {
			continue
		}
		when := int64(0)
		if len(chain) > 0 {
			when = chain[0].Committer.When.UnixNano()
		}
		if ref.Name == name {
			when = 1 << 62
		}
		if best.open == nil || when > bestWhen {
			r := ref
			best.open, best.chain, best.unwalkable, bestWhen = &r, chain, unwalkable, when
		}
	}
	return best, nil
}

// ownChain walks first parents from head until it reaches the source
// history. Following first parents keeps a merge of the source into the
// branch (a provider's "update branch" button) from dragging the source's
// own commits into the chain.
func ownChain(c repository.Client, head, src string) ([]git.Commit, error) {
	var chain []git.Commit
	for h := head; ; {
		inSource, err := c.IsAncestor(h, src)
		if err != nil || inSource {
			return chain, err
		}
		if len(chain) == maxChain {
			return chain, fmt.Errorf("%w: %.12s", errLongChain, head)
		}
		co, err := c.CommitInfo(h)
		if err != nil {
			return nil, err
		}
		chain = append(chain, co)
		if len(co.Parents) == 0 {
			return chain, fmt.Errorf("%w: %.12s", errLongChain, head)
		}
		h = co.Parents[0]
	}
}

func namesKustomization(chain []git.Commit, ks Kustomization) bool {
	for _, co := range chain {
		if message.TrailerValue(co.Message, message.TrailerKustomization) == ks.String() {
			return true
		}
	}
	return false
}

// humanCommits returns the commits in chain reflux did not author,
// newest first. A commit is reflux's when it has the Reflux-Fingerprint
// trailer and reflux's committer email: both, because humans can copy
// trailers or amend reflux's commits. A clean merge of the source branch
// into the fix branch counts as reflux's too: it brings nothing of its
// own, so rebuilding the branch over it loses nothing.
func (e *Engine) humanCommits(c repository.Client, chain []git.Commit, req Request, src string) ([]git.Commit, error) {
	var human []git.Commit
	for _, co := range chain {
		ours := len(co.Parents) == 1 &&
			strings.EqualFold(co.Committer.Email, req.Author.Email) &&
			message.TrailerValue(co.Message, message.TrailerFingerprint) != ""
		if ours {
			continue
		}
		clean, err := cleanSourceMerge(c, co, src)
		if err != nil {
			return nil, err
		}
		if !clean {
			human = append(human, co)
		}
	}
	return human, nil
}

// describe names a commit for reasons and events.
func describe(co git.Commit) string {
	return fmt.Sprintf("commit %.12s by %s <%s>", co.Hash, co.Author.Name, co.Author.Email)
}

// cleanSourceMerge reports whether co merges source history into the fix
// branch without content of its own: every file it changes relative to its
// first parent ends up exactly as in the merged source commit.
func cleanSourceMerge(c repository.Client, co git.Commit, src string) (bool, error) {
	if len(co.Parents) != 2 {
		return false, nil
	}
	fromSource, err := c.IsAncestor(co.Parents[1], src)
	if err != nil || !fromSource {
		return false, err
	}
	files, err := c.Diff(co.Parents[0], co.Hash)
	if err != nil {
		return false, err
	}
	for _, f := range files {
		got, err := c.FileHash(co.Hash, f)
		if err != nil {
			return false, err
		}
		want, err := c.FileHash(co.Parents[1], f)
		if err != nil {
			return false, err
		}
		if got != want {
			return false, nil
		}
	}
	return true, nil
}
