package gogit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	extgogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
)

const remoteName = extgogit.DefaultRemoteName

// Client is a go-git clone of one remote in a directory of its own.
type Client struct {
	dir  string
	url  string
	repo *extgogit.Repository
	auth remoteAuth
}

var _ repository.Client = &Client{}

// Option configures Open.
type Option func(*options)

type options struct {
	allowInsecureHTTP bool
}

// WithInsecureHTTP allows credentials over plain http:// URLs. Only tests
// and loopback servers should need it.
func WithInsecureHTTP() Option {
	return func(o *options) { o.allowInsecureHTTP = true }
}

// Open returns a client for remoteURL whose clone lives in dir. An existing
// clone of the same remote is reused and only fetched; anything else in dir
// (another remote, a broken clone) is removed and cloned afresh.
func Open(ctx context.Context, dir, remoteURL string, auth *git.AuthOptions, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ra, err := newRemoteAuth(remoteURL, auth, o.allowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	c := &Client{dir: dir, url: remoteURL, auth: ra}
	if c.repo, err = c.reuse(); err != nil {
		return nil, err
	}
	if c.repo == nil {
		if c.repo, err = c.init(); err != nil {
			return nil, err
		}
	}
	if err := c.Fetch(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// reuse opens the clone in dir if it is one of c.url; a nil repository
// means dir was cleared.
func (c *Client) reuse() (*extgogit.Repository, error) {
	// Any failure to open is treated like a foreign directory: the cache is
	// disposable, the remote is the truth.
	if repo, err := extgogit.PlainOpen(c.dir); err == nil {
		if remote, err := repo.Remote(remoteName); err == nil {
			if urls := remote.Config().URLs; len(urls) == 1 && urls[0] == c.url {
				return repo, nil
			}
		}
	}
	if rmErr := os.RemoveAll(c.dir); rmErr != nil {
		return nil, fmt.Errorf("clearing cache dir %s: %w", c.dir, rmErr)
	}
	return nil, nil
}

func (c *Client) init() (*extgogit.Repository, error) {
	if err := os.MkdirAll(filepath.Dir(c.dir), 0o700); err != nil {
		return nil, fmt.Errorf("creating cache dir: %w", err)
	}
	repo, err := extgogit.PlainInit(c.dir, false)
	if err != nil {
		return nil, fmt.Errorf("initialising clone: %w", err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{c.url}}); err != nil {
		return nil, fmt.Errorf("adding remote: %w", err)
	}
	return repo, nil
}

// Path implements repository.Client.
func (c *Client) Path() string {
	return c.dir
}
