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

	srv     *gittestserver.GitServer
	sshDone chan error
}

// startGitServer serves the repositories under root on two loopback ports.
func startGitServer(root string) (*GitServer, error) {
	g := &GitServer{Username: "reflux", Password: "testenv-password", sshDone: make(chan error, 1)}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("creating git root: %w", err)
	}
	// Auth switches on authentication for both transports; the SSH side
	// then demands a client key (gittestserver accepts any key by default).
	g.srv = gittestserver.NewGitServer(root).Auth(g.Username, g.Password).KeyDir(filepath.Join(root, ".keys"))
	if err := g.srv.StartHTTP(); err != nil {
		return nil, fmt.Errorf("starting git HTTP server: %w", err)
	}
	if err := g.srv.ListenSSH(); err != nil {
		g.srv.StopHTTP()
		return nil, fmt.Errorf("listening for git over SSH: %w", err)
	}
	go func() { g.sshDone <- g.srv.StartSSH() }()
	if err := g.sshCredentials(root); err != nil {
		return nil, errors.Join(err, g.stop())
	}
	return g, nil
}

// sshCredentials fills KnownHosts from the host key the SSH server created
// and generates a client identity.
func (g *GitServer) sshCredentials(root string) error {
	hostPub, err := os.ReadFile(filepath.Join(root, ".keys", "gitkit.rsa.pub"))
	if err != nil {
		return fmt.Errorf("reading SSH host key: %w", err)
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(hostPub)
	if err != nil {
		return fmt.Errorf("parsing SSH host key: %w", err)
	}
	u, err := url.Parse(g.srv.SSHAddress())
	if err != nil {
		return fmt.Errorf("parsing SSH address: %w", err)
	}
	g.KnownHosts = []byte(knownhosts.Line([]string{knownhosts.Normalize(u.Host)}, key) + "\n")

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generating SSH identity: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "testenv")
	if err != nil {
		return fmt.Errorf("encoding SSH identity: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return fmt.Errorf("encoding SSH public key: %w", err)
	}
	g.Identity = pem.EncodeToMemory(block)
	g.IdentityPub = ssh.MarshalAuthorizedKey(sshPub)
	return nil
}

// HTTPURL returns the HTTP clone URL of repo, without credentials.
func (g *GitServer) HTTPURL(repo string) string {
	return g.srv.HTTPAddress() + "/" + strings.TrimPrefix(repo, "/")
}

// SSHURL returns the SSH clone URL of repo.
func (g *GitServer) SSHURL(repo string) string {
	return g.srv.SSHAddress() + "/" + strings.TrimPrefix(repo, "/")
}

// Root is the directory holding the bare repositories.
func (g *GitServer) Root() string {
	return g.srv.Root()
}

// stop closes both listeners.
func (g *GitServer) stop() error {
	g.srv.StopHTTP()
	if err := g.srv.StopSSH(); err != nil {
		return fmt.Errorf("stopping git SSH server: %w", err)
	}
	// Serve ends with the closed listener's error, which is the expected
	// way for it to stop.
	<-g.sshDone
	return nil
}
