package writeback

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/gogit"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

// Opener opens the local clone of repoURL in dir, creating it if needed.
// The engine fetches what it needs afterwards.
type Opener func(ctx context.Context, dir, repoURL string, auth *git.AuthOptions) (repository.Client, error)

// Engine runs write-backs. It is safe for concurrent use: runs for the same
// repository URL are serialised, different repositories run in parallel.
type Engine struct {
	cacheDir    string
	open        Opener
	template    *message.Template
	now         func() time.Time
	maxAttempts int
	locks       *keyedMutex
}

// Option configures an Engine.
type Option func(*Engine) error

// WithOpener replaces the go-git client, e.g. for another implementation.
func WithOpener(o Opener) Option {
	return func(e *Engine) error {
		if o == nil {
			return errors.New("nil opener")
		}
		e.open = o
		return nil
	}
}

// WithInsecureHTTP lets the default go-git client send credentials over
// plain http://. Meant for loopback test servers only.
func WithInsecureHTTP() Option {
	return func(e *Engine) error {
		e.open = gogitOpener(gogit.WithInsecureHTTP())
		return nil
	}
}

// WithMessageTemplate sets the commit message template (see package
// message); empty text keeps the default.
func WithMessageTemplate(text string) Option {
	return func(e *Engine) error {
		t, err := message.Parse(text)
		if err != nil {
			return err
		}
		e.template = t
		return nil
	}
}

// WithMaxAttempts bounds how often a run starts over because the source
// branch moved or the push lost a race; the default is 3.
func WithMaxAttempts(n int) Option {
	return func(e *Engine) error {
		if n < 1 {
			return fmt.Errorf("max attempts must be at least 1, got %d", n)
		}
		e.maxAttempts = n
		return nil
	}
}

// New returns an Engine keeping its clones under cacheDir, one directory
// per repository URL.
func New(cacheDir string, opts ...Option) (*Engine, error) {
	if cacheDir == "" {
		return nil, errors.New("cache dir is required")
	}
	tmpl, err := message.Parse("")
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cacheDir:    cacheDir,
		open:        gogitOpener(),
		template:    tmpl,
		now:         time.Now,
		maxAttempts: 3,
		locks:       newKeyedMutex(),
	}
	for _, opt := range opts {
		if err := opt(e); err != nil {
			return nil, fmt.Errorf("configuring write-back engine: %w", err)
		}
	}
	return e, nil
}

func gogitOpener(opts ...gogit.Option) Opener {
	return func(ctx context.Context, dir, repoURL string, auth *git.AuthOptions) (repository.Client, error) {
		return gogit.Open(ctx, dir, repoURL, auth, opts...)
	}
}

// repoKey identifies a repository for locking and caching, ignoring any
// credentials embedded in the URL.
func repoKey(repoURL string) string {
	if u, err := url.Parse(repoURL); err == nil {
		u.User = nil
		return u.String()
	}
	return repoURL
}

func (e *Engine) dir(repoURL string) string {
	sum := sha256.Sum256([]byte(repoKey(repoURL)))
	return filepath.Join(e.cacheDir, hex.EncodeToString(sum[:])[:20])
}

// checkout locks the repository, opens its clone and fetches the branches
// under prefixes; the returned function closes the client and releases the
// lock. Only the source branch and reflux's prefix are fetched, so
// repositories with many feature branches stay cheap.
func (e *Engine) checkout(ctx context.Context, repoURL string, auth *git.AuthOptions, prefixes ...string) (repository.Client, func(), error) {
	dir := e.dir(repoURL)
	unlockProc := e.locks.Lock(repoKey(repoURL))
	if err := os.MkdirAll(e.cacheDir, 0o700); err != nil {
		unlockProc()
		return nil, nil, fmt.Errorf("creating cache dir: %w", err)
	}
	unlockFile, err := lockFile(dir + ".lock")
	if err != nil {
		unlockProc()
		return nil, nil, err
	}
	unlock := func() { unlockFile(); unlockProc() }
	c, err := e.open(ctx, dir, repoURL, auth)
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("%w: %w", ErrGit, err)
	}
	release := func() { c.Close(); unlock() }
	if err := c.Fetch(ctx, prefixes...); err != nil {
		release()
		return nil, nil, fmt.Errorf("%w: %w", ErrGit, err)
	}
	return c, release, nil
}
