package testenv

import (
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
)

// Git's two services: upload-pack answers clones, fetches and ls-remotes;
// receive-pack takes pushes.
const (
	uploadPack  = "git-upload-pack"
	receivePack = "git-receive-pack"
)

// RequestCounts is how many git sessions a repository has seen. A session
// is counted once, when it starts: over HTTP that is the ref advertisement
// (GET <repo>/info/refs?service=...), which every smart-HTTP client sends
// first; over SSH it is the exec request that starts the service. The
// upload-pack or receive-pack POSTs an HTTP session may follow with are not
// counted again, so a clone, a fetch and an ls-remote each count one on
// either transport, however many negotiation rounds a fetch takes.
//
// Requests are counted as they arrive, before authentication: an
// advertisement the server refuses with 401 still counts. go-git (and so
// Flux and reflux) sends credentials with the first request; the git CLI
// first asks without them, so one CLI fetch shows as two.
type RequestCounts struct {
	// UploadPack counts git-upload-pack sessions: clones, fetches and
	// ls-remotes.
	UploadPack int
	// ReceivePack counts git-receive-pack sessions: pushes.
	ReceivePack int
}

// Sub returns the sessions counted since earlier, a value Requests returned
// before.
func (c RequestCounts) Sub(earlier RequestCounts) RequestCounts {
	return RequestCounts{UploadPack: c.UploadPack - earlier.UploadPack, ReceivePack: c.ReceivePack - earlier.ReceivePack}
}

// Requests returns the sessions repo has seen over both transports since
// the server started, including those that came through a StallProxy.
func (g *GitServer) Requests(repo string) RequestCounts {
	http, ssh := g.requests.get(TransportHTTP, repo), g.requests.get(TransportSSH, repo)
	return RequestCounts{UploadPack: http.UploadPack + ssh.UploadPack, ReceivePack: http.ReceivePack + ssh.ReceivePack}
}

// RequestsOver returns the sessions repo has seen over one transport.
func (g *GitServer) RequestsOver(t Transport, repo string) RequestCounts {
	return g.requests.get(t, repo)
}

// requestKey identifies one counter.
type requestKey struct {
	transport Transport
	repo      string
	service   string
}

// requestLog holds the counters. Both transports' servers write to it from
// their own goroutines.
type requestLog struct {
	mu sync.Mutex
	n  map[requestKey]int
}

func (l *requestLog) add(t Transport, repo, service string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[requestKey]int{}
	}
	l.n[requestKey{t, cleanRepo(repo), service}]++
}

func (l *requestLog) get(t Transport, repo string) RequestCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	repo = cleanRepo(repo)
	return RequestCounts{
		UploadPack:  l.n[requestKey{t, repo, uploadPack}],
		ReceivePack: l.n[requestKey{t, repo, receivePack}],
	}
}

// cleanRepo makes "/org/r.git", "org/r.git/" and "org/r.git" one key, as
// gitkit resolves them all to the same directory.
func cleanRepo(repo string) string {
	return strings.TrimPrefix(path.Clean("/"+repo), "/")
}

// countHTTP is a gittestserver middleware that counts ref advertisements
// before gitkit sees the request, so refused ones count too.
func (l *requestLog) countHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if repo, ok := strings.CutSuffix(r.URL.Path, "/info/refs"); ok && r.Method == http.MethodGet {
			if svc := r.URL.Query().Get("service"); svc == uploadPack || svc == receivePack {
				l.add(TransportHTTP, repo, svc)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sshCommand matches the exec command an SSH git client sends, as gitkit's
// own parser does: "git-upload-pack '/repo.git'", or with a space after
// "git" as some clients write it.
var sshCommand = regexp.MustCompile(`^git[- ](upload-pack|receive-pack) '(.*)'$`)

// countSSH counts one SSH exec command; commands other than the two
// services (gitkit also knows upload-archive) are not counted.
func (l *requestLog) countSSH(command string) {
	if m := sshCommand.FindStringSubmatch(command); m != nil {
		l.add(TransportSSH, m[2], "git-"+m[1])
	}
}
