package gitserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	fluxssh "github.com/fluxcd/pkg/ssh"
	"github.com/fluxcd/pkg/ssh/knownhosts"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/testkeys"
)

// Credentials the HTTP server accepts.
const (
	Username = "reflux"
	Password = "s3cret"
)

// Server is a running test Git server.
type Server struct {
	*gittestserver.GitServer
	// SecretData authenticates against the server, in the shape of a Flux
	// GitRepository Secret.
	SecretData map[string][]byte
	ssh        bool
}

// StartHTTP serves repositories over HTTP with basic auth.
func StartHTTP(t testing.TB) *Server {
	t.Helper()
	srv := gittestserver.NewGitServer(t.TempDir()).Auth(Username, Password)
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	return &Server{
		GitServer:  srv,
		SecretData: map[string][]byte{"username": []byte(Username), "password": []byte(Password)},
	}
}

// StartSSH serves repositories over SSH; SecretData holds a client identity
// and the server's known_hosts line.
func StartSSH(t testing.TB) *Server {
	t.Helper()
	srv := gittestserver.NewGitServer(t.TempDir()).KeyDir(t.TempDir())
	if err := srv.ListenSSH(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.StartSSH() }()
	t.Cleanup(func() { _ = srv.StopSSH() })
	addr := strings.TrimPrefix(srv.SSHAddress(), "ssh://git@")
	kh, err := scanHostKey(addr)
	if err != nil {
		t.Fatal(err)
	}
	identity, _ := testkeys.SSH(t, "")
	return &Server{
		GitServer:  srv,
		ssh:        true,
		SecretData: map[string][]byte{"identity": identity, "known_hosts": kh},
	}
}

// scanHostKey waits for the SSH listener to answer and returns its
// known_hosts line; the listener exists already, so only the accept loop
// may lag behind.
func scanHostKey(addr string) ([]byte, error) {
	var err error
	for range 50 {
		var kh []byte
		if kh, err = fluxssh.ScanHostKey(addr, 2*time.Second, nil, false); err == nil {
			if _, _, err = knownhosts.New(kh); err == nil {
				return kh, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// URL returns the clone URL of repo on this server; a restarted HTTP
// server listens on a new port.
func (s *Server) URL(repo string) string {
	if s.ssh {
		return s.SSHAddress() + "/" + repo
	}
	return s.HTTPAddress() + "/" + repo
}

// Seed creates repo with files committed on branch.
func (s *Server) Seed(t testing.TB, repo, branch string, files map[string]string) {
	t.Helper()
	fixture := t.TempDir()
	for p, content := range files {
		full := filepath.Join(fixture, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.InitRepo(fixture, branch, repo); err != nil {
		t.Fatal(err)
	}
}

// HumanCommit commits files to branch of repo as a person would, with the
// git binary working directly on the server's repository, and returns the
// new commit.
func (s *Server) HumanCommit(t testing.TB, repo, branch string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	bare := filepath.Join(s.Root(), repo)
	Git(t, "", "clone", "-q", "--branch", branch, bare, dir)
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, dir, "add", "-A")
	Git(t, dir, "-c", "user.name=Jane Human", "-c", "user.email=jane@example.com", "commit", "-q", "-m", "human edit")
	Git(t, dir, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return strings.TrimSpace(Git(t, dir, "rev-parse", "HEAD"))
}

// Head returns the commit branch points at on the server, or "".
func (s *Server) Head(t testing.TB, repo, branch string) string {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	cmd.Dir = filepath.Join(s.Root(), repo)
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// Git runs git in dir and returns its output, failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
