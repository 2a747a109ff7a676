package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	binGitea       = "gitea"
	binGiteaStatic = "gitea-static"
)

// Gitea is a real Gitea server on loopback (built by `make testbin`), for
// tests of reflux's pull requests. It serves git over HTTP and its API at
// URL; SSH is off.
type Gitea struct {
	// URL is the server's root, such as http://127.0.0.1:41234.
	URL string
	// Username and Password are the admin user's; Token is an API token
	// of that user with every scope.
	Username, Password, Token string
	// Process is the running server; its log is Process.LogPath.
	Process *Process

	bin, config, work string
	ownDir            bool
	maxItems          int
	http              *http.Client
	// slow has no timeout of its own, for API calls and merges, whose
	// context bounds them: a git operation on Gitea's side can outlast
	// http's.
	slow *http.Client
}

// GiteaOptions configures StartGitea. The zero value is valid.
type GiteaOptions struct {
	// BinDir holds gitea and gitea-static (see hack/testbin/gitea.sh).
	// Defaults to the repository's bin/.
	BinDir string
	// Dir holds the server's data and log. Defaults to a new temporary
	// directory, removed by Stop.
	Dir string
	// StartTimeout bounds startup. Defaults to 60s.
	StartTimeout time.Duration
	// MaxResponseItems caps the items of one page of a list, Gitea's
	// [api].MAX_RESPONSE_ITEMS, so a test can walk several pages without
	// making hundreds of items. Zero keeps Gitea's default, 50.
	MaxResponseItems int
}

// appINI is the server's configuration: sqlite, loopback HTTP only, no
// SSH, no network calls out, and no install wizard.
var appINI = template.Must(template.New("app.ini").Parse(`APP_NAME = reflux-testenv
RUN_MODE = prod
RUN_USER = {{.User}}
WORK_PATH = {{.Work}}
{{- if .Root}}
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
{{- end}}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {{.Port}}
ROOT_URL = {{.URL}}/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = {{.Static}}
APP_DATA_PATH = {{.Work}}/data

[database]
DB_TYPE = sqlite3
PATH = {{.Work}}/data/gitea.db

[repository]
ROOT = {{.Work}}/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = {{.Secret}}
INTERNAL_TOKEN = {{.Internal}}

[service]
DISABLE_REGISTRATION = true
{{- if .MaxItems}}

[api]
MAX_RESPONSE_ITEMS = {{.MaxItems}}
{{- end}}

[mailer]
ENABLED = false

[cron]
ENABLED = false

[log]
MODE = console
LEVEL = info
ROOT_PATH = {{.Work}}/log
`))

// StartGitea starts Gitea, waits until it is healthy, creates the admin
// user and mints its token. Stop it with Stop.
func StartGitea(ctx context.Context, opts GiteaOptions) (_ *Gitea, retErr error) {
	if opts.BinDir == "" {
		root, err := findRepoRoot(".")
		if err != nil {
			return nil, err
		}
		opts.BinDir = filepath.Join(root, "bin")
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	bin, err := binaryPath(opts.BinDir, binGitea)
	if err != nil {
		return nil, err
	}
	static, err := filepath.EvalSymlinks(filepath.Join(opts.BinDir, binGiteaStatic))
	if err != nil {
		return nil, fmt.Errorf("gitea's static files: %w", ErrMissingBinary)
	}
	ownDir := opts.Dir == ""
	if ownDir {
		if opts.Dir, err = os.MkdirTemp("", "reflux-gitea-"); err != nil {
			return nil, fmt.Errorf("creating gitea directory: %w", err)
		}
	}
	g := &Gitea{Username: "reflux", Password: "testenv-" + randomHex(8), bin: bin, work: opts.Dir, ownDir: ownDir,
		config: filepath.Join(opts.Dir, "app.ini"), http: &http.Client{Timeout: 10 * time.Second}, slow: &http.Client{},
		maxItems: opts.MaxResponseItems}
	defer func() {
		if retErr != nil && g.Process != nil {
			retErr = errors.Join(retErr, g.Process.Stop(5*time.Second))
		}
	}()
	if err := g.writeConfig(static); err != nil {
		return nil, err
	}
	g.Process, err = startProcess(binGitea, bin, []string{"web", "--config", g.config, "--work-path", g.work}, g.env(), g.work)
	if err != nil {
		return nil, err
	}
	if err := g.waitHealthy(ctx, opts.StartTimeout); err != nil {
		return nil, err
	}
	if err := g.admin(ctx, "user", "create", "--admin", "--username", g.Username, "--password", g.Password,
		"--email", g.Username+"@example.com", "--must-change-password=false"); err != nil {
		return nil, err
	}
	if g.Token, err = g.mintToken(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Gitea) writeConfig(static string) error {
	addrs, err := freeAddrs(1)
	if err != nil {
		return err
	}
	port := addrs[0][strings.LastIndex(addrs[0], ":")+1:]
	g.URL = "http://" + addrs[0]
	u, err := user.Current()
	if err != nil {
		return fmt.Errorf("current user: %w", err)
	}
	var b bytes.Buffer
	if err := appINI.Execute(&b, map[string]any{
		"User": u.Username, "Root": u.Uid == "0", "Work": g.work, "Port": port, "URL": g.URL,
		"Static": static, "Secret": randomHex(32), "Internal": randomHex(32), "MaxItems": g.maxItems,
	}); err != nil {
		return fmt.Errorf("rendering app.ini: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(g.work, "data"), 0o700); err != nil {
		return fmt.Errorf("creating gitea data directory: %w", err)
	}
	return os.WriteFile(g.config, b.Bytes(), 0o600)
}

// env keeps Gitea's git configuration inside its own directory.
func (g *Gitea) env() []string {
	return append(os.Environ(), "HOME="+g.work, "GITEA_WORK_DIR="+g.work, "GITEA_CUSTOM="+filepath.Join(g.work, "custom"))
}

func (g *Gitea) waitHealthy(ctx context.Context, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if g.Process.exited() {
			return false, fmt.Errorf("gitea exited: %v (log: %s)", g.Process.waitErr, g.Process.LogPath)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/api/healthz", nil)
		if err != nil {
			return false, err
		}
		resp, err := g.http.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		_ = resp.Body.Close() // the status is all we read
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for gitea at %s: %w (log: %s)", g.URL, err, g.Process.LogPath)
	}
	return nil
}

// admin runs `gitea admin ARGS...` against the server's database.
func (g *Gitea) admin(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"admin"}, append(args, "--config", g.config, "--work-path", g.work)...)...)
	cmd.Env = g.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gitea admin %s: %w: %s", args[0], err, out)
	}
	return nil
}

func (g *Gitea) mintToken(ctx context.Context) (string, error) {
	var out struct {
		SHA1 string `json:"sha1"`
	}
	body := map[string]any{"name": "testenv", "scopes": []string{"all"}}
	if err := g.API(ctx, http.MethodPost, "/users/"+g.Username+"/tokens", body, &out); err != nil {
		return "", fmt.Errorf("minting the gitea token: %w", err)
	}
	return out.SHA1, nil
}

// API calls Gitea's REST API (path under /api/v1) as the admin user, with
// basic auth until the token exists. A status of 300 or more is an error
// quoting the answer.
//
// A write is given as long as a merge: creating a file or a pull request
// runs git on Gitea's side (a commit, a merge base and a diff), which on a
// loaded two-core CI machine has outlasted 10 s, and a write whose answer
// is lost cannot simply be retried. A read stays short, since callers poll
// reads and a hung one should fail over to the next poll.
func (g *Gitea) API(ctx context.Context, method, path string, in, out any) error {
	timeout := apiReadTimeout
	if method != http.MethodGet {
		timeout = mergeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return g.call(ctx, g.slow, method, path, in, out)
}

// apiReadTimeout bounds one read of Gitea's API.
const apiReadTimeout = 30 * time.Second

func (g *Gitea) call(ctx context.Context, client *http.Client, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.URL+"/api/v1"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if g.Token != "" {
		req.Header.Set("Authorization", "token "+g.Token)
	} else {
		req.SetBasicAuth(g.Username, g.Password)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }() // fully read below
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}

// CreateRepo creates an empty repository of the admin user and returns
// its clone URL. Push to it with basic auth (Username, Password).
func (g *Gitea) CreateRepo(ctx context.Context, name string) (string, error) {
	var out struct {
		CloneURL string `json:"clone_url"`
	}
	if err := g.API(ctx, http.MethodPost, "/user/repos", map[string]any{"name": name, "default_branch": "main"}, &out); err != nil {
		return "", err
	}
	return out.CloneURL, nil
}

// Stop ends the server and removes its directory, unless the caller
// gave it (GiteaOptions.Dir).
func (g *Gitea) Stop() error {
	err := g.Process.Stop(10 * time.Second)
	if g.ownDir {
		err = errors.Join(err, os.RemoveAll(g.work))
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// AddUser creates a plain user, such as a reviewer, and makes it a
// collaborator of the admin's repo when repo is not empty: Gitea requests
// reviews only of users who can read the repository.
func (g *Gitea) AddUser(ctx context.Context, name, repo string) error {
	if err := g.admin(ctx, "user", "create", "--username", name, "--password", "testenv-"+randomHex(8),
		"--email", name+"@example.com", "--must-change-password=false"); err != nil {
		return err
	}
	if repo == "" {
		return nil
	}
	return g.API(ctx, http.MethodPut, "/repos/"+g.Username+"/"+repo+"/collaborators/"+name,
		map[string]any{"permission": "write"}, nil)
}

// AddReader creates a user who may only read the admin's repository
// repo (a collaborator with read permission) and returns an API token of
// that user with every scope: a token the forge lets read the repository
// but not write it.
func (g *Gitea) AddReader(ctx context.Context, name, repo string) (string, error) {
	if err := g.admin(ctx, "user", "create", "--username", name, "--password", "testenv-"+randomHex(8),
		"--email", name+"@example.com", "--must-change-password=false"); err != nil {
		return "", err
	}
	if err := g.API(ctx, http.MethodPut, "/repos/"+g.Username+"/"+repo+"/collaborators/"+name,
		map[string]any{"permission": "read"}, nil); err != nil {
		return "", err
	}
	return g.MintToken(ctx, name, "all")
}

// MintToken returns a new API token of user limited to scopes, such as
// "read:repository" (a token of the admin that reads every repository and
// writes none). The CLI mints it: Gitea's API mints tokens only for the
// user who signs in with a password.
func (g *Gitea) MintToken(ctx context.Context, user string, scopes ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.bin, "admin", "user", "generate-access-token", "--username", user,
		"--token-name", "testenv-"+randomHex(4), "--scopes", strings.Join(scopes, ","), "--raw",
		"--config", g.config, "--work-path", g.work)
	cmd.Env = g.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("gitea admin user generate-access-token for %s: %w: %s", user, err, stderr.Bytes())
	}
	// Gitea logs to the console too: the token is the last word that
	// looks like one (40 hex digits), wherever a log line lands.
	token := ""
	for _, w := range strings.Fields(string(out)) {
		if tokenPattern.MatchString(w) {
			token = w
		}
	}
	if token == "" {
		return "", fmt.Errorf("gitea admin user generate-access-token for %s printed no token: %s%s", user, out, stderr.Bytes())
	}
	// The CLI writes the token into the database beside the running
	// server: wait until the server takes it, or a test's first request
	// with it may be refused (seen in CI as a 401 right after minting).
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/api/v1/user", nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "token "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close() // the status is all we read
		// 403 is a token Gitea knows whose scopes exclude the user API.
		return resp.StatusCode != http.StatusUnauthorized, nil
	})
	if err != nil {
		return "", fmt.Errorf("gitea does not take the token minted for %s: %w", user, err)
	}
	return token, nil
}

// tokenPattern is a Gitea access token.
var tokenPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// AddGPGKey registers an armored OpenPGP public key (SigningKey.Public)
// as the admin user's, so Gitea shows the commits it signs as verified.
// Gitea accepts a key without a signed verification token only when one
// of its identities is an activated email of the user (the admin's is
// Username@example.com), and it verifies a commit only when the commit's
// committer email is such an email too (services/asymkey/commit.go in
// Gitea v1.26): sign as Username@example.com.
func (g *Gitea) AddGPGKey(ctx context.Context, public []byte) error {
	var out struct {
		Emails []struct {
			Email    string `json:"email"`
			Verified bool   `json:"verified"`
		} `json:"emails"`
	}
	if err := g.API(ctx, http.MethodPost, "/user/gpg_keys", map[string]any{"armored_public_key": string(public)}, &out); err != nil {
		return fmt.Errorf("adding the gpg key of %s: %w", g.Username, err)
	}
	for _, e := range out.Emails {
		if e.Verified {
			return nil
		}
	}
	return fmt.Errorf("gitea took the gpg key of %s but verified none of its emails %v", g.Username, out.Emails)
}
