package writeback

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

const (
	repoName = "fleet.git"
	fp1      = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	fp2      = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	webFile  = "apps/web/deploy.yaml"
	// fpNone is the fingerprint of an empty drift set.
	fpNone = "none"
)

var reflux = Author{Name: "reflux", Email: "reflux@reflux.dev"}

// fixture is one git server with a seeded fleet repository.
type fixture struct {
	t   *testing.T
	srv *gitserver.Server
	eng *Engine
}

func newFixture(t *testing.T, start func(testing.TB) *gitserver.Server, opts ...Option) *fixture {
	t.Helper()
	srv := start(t)
	srv.Seed(t, repoName, "main", map[string]string{
		webFile:                 "replicas: 2\nimage: web:1.0\n",
		"apps/api/deploy.yaml":  "replicas: 1\n",
		"clusters/prod/ks.yaml": "path: ./apps\n",
	})
	return &fixture{t: t, srv: srv, eng: newEngine(t, t.TempDir(), opts...)}
}

func newEngine(t *testing.T, cache string, opts ...Option) *Engine {
	t.Helper()
	eng, err := New(cache, append([]Option{WithInsecureHTTP()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func (f *fixture) request(fp string, apply ApplyFunc) Request {
	f.t.Helper()
	req, err := newRequest(f.srv.URL(repoName), f.srv.SecretData, fp, apply)
	if err != nil {
		f.t.Fatal(err)
	}
	return req
}

// newRequest is the write-back the tests make, against repoURL with
// credentials in the shape of a GitRepository Secret.
func newRequest(repoURL string, secret map[string][]byte, fp string, apply ApplyFunc) (Request, error) {
	auth, err := git.NewAuth(repoURL, secret)
	if err != nil {
		return Request{}, err
	}
	return Request{
		RepoURL:       repoURL,
		Auth:          auth,
		SourceBranch:  "main",
		Kustomization: Kustomization{Namespace: "flux-system", Name: "apps"},
		Fingerprint:   fp,
		Kind:          KindMerge,
		Author:        reflux,
		Fields: []message.Field{{Object: "apps/v1/Deployment apps/web", Pointer: "/spec/replicas",
			GitValue: "2", LiveValue: "5", File: webFile, Line: 1, LastModifier: "kubectl", Severity: "low"}},
		Apply: apply,
	}, nil
}

func (f *fixture) run(req Request) Result {
	f.t.Helper()
	res, err := f.eng.Run(context.Background(), req)
	NewWithT(f.t).Expect(err).ToNot(HaveOccurred(), "%+v", res)
	return res
}

// show returns path at rev in the server's repository.
func (f *fixture) show(rev, path string) string {
	return gitserver.Git(f.t, filepath.Join(f.srv.Root(), repoName), "show", rev+":"+path)
}

func (f *fixture) gitOut(args ...string) string {
	return strings.TrimSpace(gitserver.Git(f.t, filepath.Join(f.srv.Root(), repoName), args...))
}

// setReplicas is an idempotent Apply that writes the live replica count.
func setReplicas(n int) ApplyFunc {
	return func(dir string) ([]string, error) {
		return []string{webFile}, writeWeb(dir, n, "web:1.0")
	}
}

// guardedReplicas fails like the real editor does when the field no longer
// holds the value Git had when the drift was classified.
func guardedReplicas(gitValue, live int, calls *atomic.Int32, during func()) ApplyFunc {
	return func(dir string) ([]string, error) {
		if calls != nil && calls.Add(1) == 1 && during != nil {
			during()
		}
		b, err := os.ReadFile(filepath.Join(dir, webFile))
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(string(b), fmt.Sprintf("replicas: %d\n", gitValue)) &&
			!strings.HasPrefix(string(b), fmt.Sprintf("replicas: %d\n", live)) {
			return nil, fmt.Errorf("%s /spec/replicas changed in git: %q", webFile, strings.SplitN(string(b), "\n", 2)[0])
		}
		image := strings.TrimPrefix(strings.SplitN(string(b), "\n", 3)[1], "image: ")
		return []string{webFile}, writeWeb(dir, live, image)
	}
}

// editWeb is an Apply that writes the fields of a drift set into the web
// Deployment as it finds it, leaving other lines alone: replicas 0 or an
// empty image means the field is not in the set.
func editWeb(replicas int, image string) ApplyFunc {
	return func(dir string) ([]string, error) {
		full := filepath.Join(dir, webFile)
		b, err := os.ReadFile(full)
		if err != nil {
			return nil, err
		}
		var out strings.Builder
		for line := range strings.Lines(string(b)) {
			switch {
			case replicas != 0 && strings.HasPrefix(line, "replicas: "):
				line = fmt.Sprintf("replicas: %d\n", replicas)
			case image != "" && strings.HasPrefix(line, "image: "):
				line = "image: " + image + "\n"
			}
			out.WriteString(line)
		}
		return []string{webFile}, os.WriteFile(full, []byte(out.String()), 0o644)
	}
}

// noChange is the Apply of an empty drift set.
func noChange(string) ([]string, error) {
	return nil, nil
}

func writeWeb(dir string, replicas int, image string) error {
	return os.WriteFile(filepath.Join(dir, webFile), fmt.Appendf(nil, "replicas: %d\nimage: %s\n", replicas, image), 0o644)
}
