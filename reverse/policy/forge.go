package policy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// forgeCheckTimeout bounds a policy's forge check: a forge that does not
// answer must not hold the policy's reconcile.
const forgeCheckTimeout = 15 * time.Second

// forgeCheckTTL is how long a passed forge check stands. The policy is
// reconciled on every change of its Drift records, and a forge's API is
// rate-limited (GitHub: 5,000 requests an hour per token): each
// reconcile asking would spend the budget write-back needs. A token or
// repository that changes is checked at once, a failure on every
// reconcile.
const forgeCheckTTL = 10 * time.Minute

// ForgeChecks proves that a policy's pull-request token works and
// reaches its repositories, and remembers which checks passed, and when.
// A nil *ForgeChecks remembers nothing: every Check asks the forge. It is
// safe for concurrent use.
type ForgeChecks struct {
	mu     sync.Mutex
	now    func() time.Time
	passes map[[sha256.Size]byte]time.Time
}

// NewForgeChecks returns ForgeChecks that read the time from now.
func NewForgeChecks(now func() time.Time) *ForgeChecks {
	return &ForgeChecks{now: now, passes: map[[sha256.Size]byte]time.Time{}}
}

// Check proves that token reaches every one of repoURLs on the forge pr
// names. A token the forge refuses, or a repository it does not show the
// token, is the user's to fix: a *FieldError (ErrInvalid); so is a token
// the forge says may only read (its Cause is then a forge.ReadOnlyError).
// A forge that does not answer is an error to retry.
func (f *ForgeChecks) Check(ctx context.Context, pr *refluxv1.PullRequestSpec, token string, repoURLs []string) error {
	ctx, cancel := context.WithTimeout(ctx, forgeCheckTimeout)
	defer cancel()
	seen := map[string]bool{}
	for _, url := range repoURLs {
		if url == "" || seen[url] {
			continue
		}
		seen[url] = true
		opts := forge.Options{Provider: string(pr.Provider), Token: token, APIURL: pr.APIURL, RepoURL: url}
		if f.fresh(opts) {
			continue
		}
		if err := check(ctx, opts); err != nil {
			err = fmt.Errorf("%s repository %s: %w", pr.Provider, url, err)
			if forge.Unauthorized(err) || forge.ReadOnly(err) || forge.StatusCode(err) == http.StatusNotFound {
				return &FieldError{Field: "spec.git.pullRequest", Reason: err.Error(), Cause: err}
			}
			return err
		}
		f.passed(opts)
	}
	return nil
}

func check(ctx context.Context, opts forge.Options) error {
	c, err := forge.New(ctx, opts)
	if err != nil {
		return err
	}
	return c.Check(ctx)
}

// key identifies a check by everything that decides its outcome, the
// token hashed so that it is not kept in memory twice.
func (*ForgeChecks) key(o forge.Options) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join([]string{o.Provider, o.APIURL, o.RepoURL, o.Token}, "\x00")))
}

// fresh reports whether the same check passed within forgeCheckTTL.
func (f *ForgeChecks) fresh(o forge.Options) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.passes[f.key(o)]
	return ok && f.now().Sub(at) < forgeCheckTTL
}

// passed records a check that passed.
func (f *ForgeChecks) passed(o forge.Options) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for k, at := range f.passes {
		if now.Sub(at) >= forgeCheckTTL {
			delete(f.passes, k) // bounded by the checks of the last TTL
		}
	}
	f.passes[f.key(o)] = now
}
