package testenv

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/fluxcd/pkg/gittestserver"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// DefaultBranch is the branch Push writes to when none is given.
const DefaultBranch = "main"

// GitServer is a git server on loopback. It serves the same repositories
// over HTTP with basic auth and over SSH with public-key auth, so tests can
// prove both of Flux's transports and reflux's write-back against them.
type GitServer struct {
	// Username and Password are the HTTP basic-auth credentials.
	Username, Password string
	// KnownHosts is a known_hosts line for the SSH server's host key.
	KnownHosts []byte
	// Identity is an OpenSSH private key for SSH clients, and IdentityPub
	// its authorized_keys form. The server demands a client key but, as
	// gittestserver does by default, accepts any; the host key, in
	// KnownHosts, is what Flux verifies.
	Identity, IdentityPub []byte

	srv      *gittestserver.GitServer
	sshDone  chan error
	front    *sshFront
	hostKey  ssh.PublicKey
	requests requestLog
}

// startGitServer serves the repositories under root on loopback: HTTP
// directly from gittestserver, SSH through the counting front.
func startGitServer(root string) (*GitServer, error) {
	g := &GitServer{Username: "reflux", Password: "testenv-password", sshDone: make(chan error, 1)}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("creating git root: %w", err)
	}
	// Auth switches on authentication for both transports; the SSH side
	// then demands a client key (gittestserver accepts any key by default).
	g.srv = gittestserver.NewGitServer(root).Auth(g.Username, g.Password).KeyDir(filepath.Join(root, ".keys"))
	g.srv.AddHTTPMiddlewares(g.requests.countHTTP)
	if err := g.srv.StartHTTP(); err != nil {
		return nil, fmt.Errorf("starting git HTTP server: %w", err)
	}
	if err := g.srv.ListenSSH(); err != nil {
		g.srv.StopHTTP()
		return nil, fmt.Errorf("listening for git over SSH: %w", err)
	}
	go func() { g.sshDone <- g.srv.StartSSH() }()
	if err := g.startSSHFront(root); err != nil {
		return nil, errors.Join(err, g.stop())
	}
	return g, nil
}

// startSSHFront generates the client identity and puts the counting SSH
// front (see sshFront) before gittestserver's SSH port. SSHURL and
// KnownHosts name the front, so every SSH client goes through it.
func (g *GitServer) startSSHFront(root string) error {
	hostKeyPEM, err := os.ReadFile(filepath.Join(root, ".keys", "gitkit.rsa"))
	if err != nil {
		return fmt.Errorf("reading SSH host key: %w", err)
	}
	hostKey, err := ssh.ParsePrivateKey(hostKeyPEM)
	if err != nil {
		return fmt.Errorf("parsing SSH host key: %w", err)
	}
	identity, err := g.sshIdentity()
	if err != nil {
		return err
	}
	u, err := url.Parse(g.srv.SSHAddress())
	if err != nil {
		return fmt.Errorf("parsing SSH address: %w", err)
	}
	if g.front, err = startSSHFront(u.Host, hostKey, identity, g.requests.countSSH); err != nil {
		return err
	}
	g.hostKey = hostKey.PublicKey()
	g.KnownHosts = g.KnownHostsAt(g.front.Addr())
	return nil
}

// KnownHostsAt returns a known_hosts line trusting the server's host key at
// addr (host:port), for SSH clients pointed at a StallProxy: known_hosts
// entries name the port, so KnownHosts does not cover the proxy's.
func (g *GitServer) KnownHostsAt(addr string) []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, g.hostKey) + "\n")
}

// sshIdentity generates a client identity, fills Identity and IdentityPub
// with it and returns its signer.
func (g *GitServer) sshIdentity() (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating SSH identity: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "testenv")
	if err != nil {
		return nil, fmt.Errorf("encoding SSH identity: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding SSH public key: %w", err)
	}
	g.Identity = pem.EncodeToMemory(block)
	g.IdentityPub = ssh.MarshalAuthorizedKey(signer.PublicKey())
	return signer, nil
}

// HTTPURL returns the HTTP clone URL of repo, without credentials.
func (g *GitServer) HTTPURL(repo string) string {
	return g.srv.HTTPAddress() + "/" + strings.TrimPrefix(repo, "/")
}

// SSHURL returns the SSH clone URL of repo. It names the counting front,
// not gittestserver's own port.
func (g *GitServer) SSHURL(repo string) string {
	return "ssh://git@" + g.front.Addr() + "/" + strings.TrimPrefix(repo, "/")
}

// Root is the directory holding the bare repositories.
func (g *GitServer) Root() string {
	return g.srv.Root()
}

// stop closes the listeners.
func (g *GitServer) stop() error {
	var errs []error
	if g.front != nil {
		if err := g.front.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the SSH front: %w", err))
		}
	}
	g.srv.StopHTTP()
	if err := g.srv.StopSSH(); err != nil {
		return errors.Join(append(errs, fmt.Errorf("stopping git SSH server: %w", err))...)
	}
	// Serve ends with the closed listener's error, which is the expected
	// way for it to stop.
	<-g.sshDone
	return errors.Join(errs...)
}
