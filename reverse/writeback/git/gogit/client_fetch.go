package gogit

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	extgogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

const remoteRefPrefix = "refs/remotes/" + remoteName + "/"

// Fetch implements repository.Client.
func (c *Client) Fetch(ctx context.Context, prefixes ...string) error {
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	specs := make([]config.RefSpec, 0, len(prefixes))
	for _, p := range prefixes {
		specs = append(specs, config.RefSpec("+refs/heads/"+p+"*:"+remoteRefPrefix+p+"*"))
	}
	err := c.repo.FetchContext(ctx, &extgogit.FetchOptions{
		RemoteName: remoteName,
		RefSpecs:   specs,
		Prune:      true,
		Force:      true,
		Tags:       extgogit.NoTags,
		Auth:       c.auth.method,
		CABundle:   c.auth.caBundle,
		ClientCert: c.auth.clientCert,
		ClientKey:  c.auth.clientKey,
	})
	switch {
	case err == nil, errors.Is(err, extgogit.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	default:
		return fmt.Errorf("fetching %s: %w", redact(c.url), err)
	}
}

// Branch implements repository.Client.
func (c *Client) Branch(name string) (git.Ref, error) {
	ref, err := c.repo.Reference(plumbing.ReferenceName(remoteRefPrefix+name), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return git.Ref{}, fmt.Errorf("%w: %s", git.ErrBranchNotFound, name)
	}
	if err != nil {
		return git.Ref{}, fmt.Errorf("reading branch %s: %w", name, err)
	}
	return git.Ref{Name: name, Hash: ref.Hash().String()}, nil
}

// Branches implements repository.Client.
func (c *Client) Branches(prefix string) ([]git.Ref, error) {
	iter, err := c.repo.References()
	if err != nil {
		return nil, fmt.Errorf("listing references: %w", err)
	}
	var out []git.Ref
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name, ok := strings.CutPrefix(ref.Name().String(), remoteRefPrefix)
		if ok && ref.Type() == plumbing.HashReference && strings.HasPrefix(name, prefix) {
			out = append(out, git.Ref{Name: name, Hash: ref.Hash().String()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing references: %w", err)
	}
	return out, nil
}

// redact hides a password embedded in the URL; error texts end up in
// events and conditions.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}
