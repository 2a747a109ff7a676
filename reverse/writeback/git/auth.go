package git

import (
	"fmt"
	"net/url"

	fluxgit "github.com/fluxcd/pkg/git"
)

// AuthOptions are fluxcd/pkg/git's authentication options.
type AuthOptions = fluxgit.AuthOptions

// NewAuth builds authentication for repoURL from the data of a Flux
// GitRepository Secret: "username"/"password" or "bearerToken" for HTTPS
// (plus optional "ca.crt", "tls.crt", "tls.key"), or "identity" and
// "known_hosts" for SSH. Nil data means anonymous access.
func NewAuth(repoURL string, data map[string][]byte) (*AuthOptions, error) {
	u, err := url.Parse(repoURL)
	if err != nil {
		return nil, fmt.Errorf("parsing repository URL: %w", err)
	}
	opts, err := fluxgit.NewAuthOptions(*u, data)
	if err != nil {
		return nil, fmt.Errorf("building auth for %s: %w", u.Redacted(), err)
	}
	return opts, nil
}
