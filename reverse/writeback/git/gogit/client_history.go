package gogit

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// CommitInfo implements repository.Client.
func (c *Client) CommitInfo(hash string) (git.Commit, error) {
	co, err := c.commit(hash)
	if err != nil {
		return git.Commit{}, err
	}
	out := git.Commit{
		Hash:      co.Hash.String(),
		Author:    git.Signature{Name: co.Author.Name, Email: co.Author.Email, When: co.Author.When},
		Committer: git.Signature{Name: co.Committer.Name, Email: co.Committer.Email, When: co.Committer.When},
		Message:   co.Message,
		Signed:    co.PGPSignature != "",
	}
	for _, p := range co.ParentHashes {
		out.Parents = append(out.Parents, p.String())
	}
	return out, nil
}

// IsAncestor implements repository.Client. go-git's Commit.IsAncestor
// walks the whole history of descendant for every negative answer, and the
// engine asks about several commits against the same source head, so the
// ancestor set of descendant is computed once and kept.
func (c *Client) IsAncestor(ancestor, descendant string) (bool, error) {
	if _, err := c.commit(ancestor); err != nil {
		return false, err
	}
	set, err := c.ancestorSet(plumbing.NewHash(descendant))
	if err != nil {
		return false, err
	}
	_, ok := set[plumbing.NewHash(ancestor)]
	return ok, nil
}

func (c *Client) ancestorSet(h plumbing.Hash) (map[plumbing.Hash]struct{}, error) {
	if set, ok := c.ancestors[h]; ok {
		return set, nil
	}
	start, err := c.commit(h.String())
	if err != nil {
		return nil, err
	}
	set := map[plumbing.Hash]struct{}{}
	err = object.NewCommitPreorderIter(start, nil, nil).ForEach(func(co *object.Commit) error {
		set[co.Hash] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking history of %s: %w", h, err)
	}
	if c.ancestors == nil {
		c.ancestors = map[plumbing.Hash]map[plumbing.Hash]struct{}{}
	}
	c.ancestors[h] = set
	return set, nil
}

// MergeBase implements repository.Client.
func (c *Client) MergeBase(a, b string) (string, error) {
	ca, err := c.commit(a)
	if err != nil {
		return "", err
	}
	cb, err := c.commit(b)
	if err != nil {
		return "", err
	}
	bases, err := ca.MergeBase(cb)
	if err != nil {
		return "", fmt.Errorf("finding merge base: %w", err)
	}
	if len(bases) == 0 {
		return "", nil
	}
	return bases[0].Hash.String(), nil
}

// Diff implements repository.Client.
func (c *Client) Diff(from, to string) ([]string, error) {
	ft, err := c.tree(from)
	if err != nil {
		return nil, err
	}
	tt, err := c.tree(to)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(ft, tt)
	if err != nil {
		return nil, fmt.Errorf("diffing %s..%s: %w", from, to, err)
	}
	seen := map[string]bool{}
	for _, ch := range changes {
		seen[ch.From.Name] = ch.From.Name != ""
		seen[ch.To.Name] = ch.To.Name != ""
	}
	var out []string
	for p, ok := range seen {
		if ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// FileHash implements repository.Client.
func (c *Client) FileHash(commit, path string) (string, error) {
	t, err := c.tree(commit)
	if err != nil {
		return "", err
	}
	e, err := t.FindEntry(path)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s at %s: %w", path, commit, err)
	}
	return e.Hash.String(), nil
}

// FileContent implements repository.Client.
func (c *Client) FileContent(commit, path string) ([]byte, bool, error) {
	t, err := c.tree(commit)
	if err != nil {
		return nil, false, err
	}
	e, err := t.FindEntry(path)
	switch {
	case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading %s at %s: %w", path, commit, err)
	case e.Mode == filemode.Dir:
		return nil, false, nil
	case !e.Mode.IsFile() || e.Mode == filemode.Symlink:
		return nil, false, fmt.Errorf("%w: %s at %.12s has mode %s", git.ErrNotRegularFile, path, commit, e.Mode)
	}
	blob, err := c.repo.BlobObject(e.Hash)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s at %s: %w", path, commit, err)
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, false, fmt.Errorf("reading %s at %s: %w", path, commit, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s at %s: %w", path, commit, err)
	}
	return data, true, nil
}

func (c *Client) commit(hash string) (*object.Commit, error) {
	co, err := c.repo.CommitObject(plumbing.NewHash(hash))
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", hash, err)
	}
	return co, nil
}

// tree returns the tree of commit, or an empty tree for "".
func (c *Client) tree(commit string) (*object.Tree, error) {
	if commit == "" {
		return &object.Tree{}, nil
	}
	co, err := c.commit(commit)
	if err != nil {
		return nil, err
	}
	t, err := co.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading tree of %s: %w", commit, err)
	}
	return t, nil
}
