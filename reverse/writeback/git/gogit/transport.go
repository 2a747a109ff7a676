package gogit

import (
	"fmt"
	"net/url"

	"github.com/fluxcd/pkg/ssh/knownhosts"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// remoteAuth is everything go-git's fetch and push options need to reach
// the remote.
type remoteAuth struct {
	method                          transport.AuthMethod
	caBundle, clientCert, clientKey []byte
}

func newRemoteAuth(remoteURL string, opts *git.AuthOptions, allowInsecureHTTP bool) (remoteAuth, error) {
	if opts == nil {
		return remoteAuth{}, nil
	}
	u, err := url.Parse(remoteURL)
	if err != nil {
		return remoteAuth{}, fmt.Errorf("parsing repository URL: %w", err)
	}
	ra := remoteAuth{caBundle: opts.CAFile, clientCert: opts.ClientCert, clientKey: opts.ClientKey}
	switch u.Scheme {
	case "https", "http":
		hasCreds := opts.Username != "" || opts.Password != "" || opts.BearerToken != ""
		if u.Scheme == "http" && hasCreds && !allowInsecureHTTP {
			return remoteAuth{}, git.ErrInsecureTransport
		}
		switch {
		case opts.Username != "" || opts.Password != "":
			ra.method = &http.BasicAuth{Username: opts.Username, Password: opts.Password}
		case opts.BearerToken != "":
			ra.method = &http.TokenAuth{Token: opts.BearerToken}
		}
	case "ssh":
		m, err := sshAuth(opts)
		if err != nil {
			return remoteAuth{}, err
		}
		ra.method = m
	}
	return ra, nil
}

// sshAuth checks the server against known_hosts only: there is no fallback
// to the machine's own known_hosts, as a controller has none worth trusting.
func sshAuth(opts *git.AuthOptions) (transport.AuthMethod, error) {
	pk, err := gitssh.NewPublicKeys(opts.Username, opts.Identity, opts.Password)
	if err != nil {
		return nil, fmt.Errorf("parsing SSH identity: %w", err)
	}
	callback, algos, err := knownhosts.New(opts.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("parsing known_hosts: %w", err)
	}
	pk.HostKeyCallback = callback
	return &publicKeys{PublicKeys: pk, hostKeyAlgos: algos}, nil
}

// publicKeys advertises only the host key algorithms known_hosts can
// verify; otherwise the server may pick a key type we cannot check.
type publicKeys struct {
	*gitssh.PublicKeys
	hostKeyAlgos []string
}

// ClientConfig implements gitssh.AuthMethod.
func (p *publicKeys) ClientConfig() (*gossh.ClientConfig, error) {
	cfg, err := p.PublicKeys.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.HostKeyAlgorithms = p.hostKeyAlgos
	return cfg, nil
}
