package gogit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	extgogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
)

const remoteName = extgogit.DefaultRemoteName

// Client is a go-git clone of one remote in a directory of its own.
type Client struct {
	dir     string
	url     string
	repo    *extgogit.Repository
	storage *filesystem.Storage
	auth    remoteAuth
	// ancestors caches the ancestor set of a commit. Ancestry never
	// changes for a given commit hash, so the cache needs no invalidation;
	// it lives as long as the client, i.e. one write-back.
	ancestors map[plumbing.Hash]map[plumbing.Hash]struct{}
	maxPacks  int
}

var _ repository.Client = &Client{}

// Option configures Open.
type Option func(*options)

type options struct {
	allowInsecureHTTP bool
	maxPacks          int
}

// DefaultMaxPacks is how many pack files a cached clone may collect before
// it is dropped and fetched afresh. Every fetch that brings new commits
// adds a pack, go-git has no gc, and object lookups scan every pack, so
// without a bound a long-lived cache slows down and, with pack descriptors
// kept open, runs out of file descriptors.
const DefaultMaxPacks = 64

// WithMaxPacks overrides DefaultMaxPacks.
func WithMaxPacks(n int) Option {
	return func(o *options) { o.maxPacks = n }
}

// WithInsecureHTTP allows credentials over plain http:// URLs. Only tests
// and loopback servers should need it.
func WithInsecureHTTP() Option {
	return func(o *options) { o.allowInsecureHTTP = true }
}

// Open returns a client for remoteURL whose clone lives in dir. An existing
// clone of the same remote is reused; anything else in dir (another remote,
// a broken clone) is removed and initialised afresh. Open does not talk to
// the remote: call Fetch for the branches you need.
func Open(_ context.Context, dir, remoteURL string, auth *git.AuthOptions, opts ...Option) (*Client, error) {
	o := options{maxPacks: DefaultMaxPacks}
	for _, opt := range opts {
		opt(&o)
	}
	ra, err := newRemoteAuth(remoteURL, auth, o.allowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	c := &Client{dir: dir, url: remoteURL, auth: ra, maxPacks: o.maxPacks}
	if c.repo, err = c.reuse(); err != nil {
		return nil, err
	}
	if c.repo == nil {
		if c.repo, err = c.init(); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// open sets up storage for dir. Descriptors of pack files are kept open
// for the client's lifetime: without that go-git reopens the pack for
// every object read, which dominated checkout time on a 1,000-file
// repository. (ExclusiveAccess is left off: it caches the loose object
// list and rebuilds it after every write, which made commits slower.)
func (c *Client) open() (*extgogit.Repository, error) {
	c.Close()
	dot := osfs.New(filepath.Join(c.dir, extgogit.GitDirName), osfs.WithBoundOS())
	c.storage = filesystem.NewStorageWithOptions(dot, cache.NewObjectLRUDefault(),
		filesystem.Options{KeepDescriptors: true})
	return extgogit.Open(c.storage, osfs.New(c.dir, osfs.WithBoundOS()))
}

// Close releases the pack file descriptors; the clone stays on disk.
func (c *Client) Close() {
	if c.storage != nil {
		_ = c.storage.Close()
		c.storage = nil
	}
}

// reuse opens the clone in dir if it is one of c.url; a nil repository
// means dir was cleared.
func (c *Client) reuse() (*extgogit.Repository, error) {
	// Any failure to open is treated like a foreign directory: the cache is
	// disposable, the remote is the truth.
	if repo, err := c.open(); err == nil && c.packs() <= c.maxPacks && readable(repo) {
		if remote, err := repo.Remote(remoteName); err == nil {
			if urls := remote.Config().URLs; len(urls) == 1 && urls[0] == c.url {
				return repo, nil
			}
		}
	}
	c.Close()
	if rmErr := os.RemoveAll(c.dir); rmErr != nil {
		return nil, fmt.Errorf("clearing cache dir %s: %w", c.dir, rmErr)
	}
	return nil, nil
}

// readable reports whether every ref and the index of repo can be read.
// go-git rewrites ref files and the index in place, truncating first, so a
// process killed mid-write leaves an empty file that fails every later
// fetch or checkout (issue 5).
func readable(repo *extgogit.Repository) bool {
	refs, err := repo.Storer.IterReferences()
	if err != nil {
		return false
	}
	if err := refs.ForEach(func(*plumbing.Reference) error { return nil }); err != nil {
		return false
	}
	_, err = repo.Storer.Index()
	return err == nil
}

func (c *Client) init() (*extgogit.Repository, error) {
	if err := os.MkdirAll(filepath.Dir(c.dir), 0o700); err != nil {
		return nil, fmt.Errorf("creating cache dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(c.dir, extgogit.GitDirName), 0o700); err != nil {
		return nil, fmt.Errorf("creating clone dir: %w", err)
	}
	if _, err := c.open(); !errors.Is(err, extgogit.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("opening fresh clone dir: %w", err)
	}
	repo, err := extgogit.Init(c.storage, osfs.New(c.dir, osfs.WithBoundOS()))
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

// packs counts the pack files of the clone.
func (c *Client) packs() int {
	matches, _ := filepath.Glob(filepath.Join(c.dir, extgogit.GitDirName, "objects", "pack", "*.pack"))
	return len(matches)
}
