package writeback

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/gittestserver"
	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
)

// TestRunWithBearerToken authenticates with a GitRepository Secret's
// `bearerToken`, as Flux does for token-based HTTPS hosts. gittestserver
// only knows basic auth, so a loopback proxy in front of it demands the
// token and refuses everything else.
func TestRunWithBearerToken(t *testing.T) {
	g := NewWithT(t)
	const token = "glpat-reflux-e2e"
	backend := gittestserver.NewGitServer(t.TempDir()).AutoCreate()
	g.Expect(backend.StartHTTP()).To(Succeed())
	t.Cleanup(backend.StopHTTP)
	target, err := url.Parse(backend.HTTPAddress())
	g.Expect(err).ToNot(HaveOccurred())
	var authorised, refused atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	// Its own transport, as the crash tests' gate (startPushGate) explains.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	proxy.Transport = transport
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		authorised.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	// Seed through the backend directly, as the repository's owner would.
	seed := &gitserver.Server{GitServer: backend}
	seed.Seed(t, repoName, "main", map[string]string{webFile: "replicas: 2\nimage: web:1.0\n"})

	repoURL := front.URL + "/" + repoName
	eng := newEngine(t, t.TempDir())
	req, err := newRequest(repoURL, map[string][]byte{"bearerToken": []byte(token)}, fp1, setReplicas(3))
	g.Expect(err).ToNot(HaveOccurred())
	res, err := eng.Run(t.Context(), req)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
	g.Expect(authorised.Load()).To(BeNumerically(">", 0))

	// A wrong token is refused by the server and reported as a git error.
	bad, err := newRequest(repoURL, map[string][]byte{"bearerToken": []byte("wrong")}, fp2, setReplicas(4))
	g.Expect(err).ToNot(HaveOccurred())
	res, err = newEngine(t, t.TempDir()).Run(t.Context(), bad)
	g.Expect(err).To(HaveOccurred())
	g.Expect(res.Outcome).To(Equal(GitError))
	g.Expect(refused.Load()).To(BeNumerically(">", 0))
	g.Expect(strings.Contains(err.Error(), token)).To(BeFalse(), "the token never appears in errors")
}
