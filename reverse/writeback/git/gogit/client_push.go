package gogit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	extgogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// Push implements repository.Client.
func (c *Client) Push(ctx context.Context, req git.PushRequest) error {
	spec := req.Hash + ":refs/heads/" + req.Branch
	if req.Force {
		spec = "+" + spec
	}
	if err := c.push(ctx, spec, req.Branch, req.Lease); err != nil {
		return err
	}
	return c.setTracking(req.Branch, req.Hash)
}

// Delete implements repository.Client.
func (c *Client) Delete(ctx context.Context, branch, lease string) error {
	if lease == "" {
		return fmt.Errorf("deleting %s: a lease is required", branch)
	}
	if err := c.push(ctx, ":refs/heads/"+branch, branch, lease); err != nil {
		return err
	}
	err := c.repo.Storer.RemoveReference(plumbing.ReferenceName(remoteRefPrefix + branch))
	if err != nil {
		return fmt.Errorf("dropping tracking ref of %s: %w", branch, err)
	}
	return nil
}

// push sends one refspec. A non-empty lease makes the server-side update
// conditional on the branch still pointing there (the old value is part of
// the update command), which is git's --force-with-lease.
func (c *Client) push(ctx context.Context, spec, branch, lease string) error {
	opts := &extgogit.PushOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(spec)},
		Auth:       c.auth.method,
		CABundle:   c.auth.caBundle,
		ClientCert: c.auth.clientCert,
		ClientKey:  c.auth.clientKey,
	}
	if lease != "" {
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(lease + ":refs/heads/" + branch)}
	}
	err := c.repo.PushContext(ctx, opts)
	switch {
	case err == nil, errors.Is(err, extgogit.NoErrAlreadyUpToDate):
		return nil
	case isRejection(err):
		return fmt.Errorf("%w: %s: %w", git.ErrPushRejected, branch, err)
	default:
		return fmt.Errorf("pushing %s: %w", branch, err)
	}
}

// isRejection tells a refused update from a transport failure. go-git
// reports both as plain errors, so this matches its messages.
func isRejection(err error) bool {
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "required to be", "command error on", "rejected", "hook declined"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func (c *Client) setTracking(branch, hash string) error {
	ref := plumbing.NewHashReference(plumbing.ReferenceName(remoteRefPrefix+branch), plumbing.NewHash(hash))
	if err := c.repo.Storer.SetReference(ref); err != nil {
		return fmt.Errorf("updating tracking ref of %s: %w", branch, err)
	}
	return nil
}
