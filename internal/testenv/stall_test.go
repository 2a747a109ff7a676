package testenv_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// stallDeadline is the clients' deadline against a stalled proxy: long
// enough for the connection to be seen held under -race, short enough to
// keep the tests quick.
const stallDeadline = 2 * time.Second

// startStallProxy seeds repo, then starts a proxy for t and returns it with
// the count of network goroutines before it existed.
func startStallProxy(t *testing.T, tr testenv.Transport, repo string) (*testenv.StallProxy, int) {
	t.Helper()
	g := NewWithT(t)
	_, err := env.Git.PushDir(context.Background(), repo, writeTree(t, map[string]string{"a.yaml": "a"}))
	g.Expect(err).NotTo(HaveOccurred())
	before := networkGoroutines()
	p, err := env.Git.StallProxyFor(tr)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = p.Close() }) // the tests close it themselves; this is for early failures
	return p, before
}

// expectNoLeaks closes p and waits until the goroutines it and its clients
// started are gone.
func expectNoLeaks(g *WithT, p *testenv.StallProxy, before int) {
	g.Expect(p.Close()).To(Succeed())
	g.Expect(p.Held()).To(BeZero())
	g.Eventually(networkGoroutines, 10*time.Second).Should(BeNumerically("<=", before))
}

func TestStallProxyHTTPFailsByDeadlineThenResumes(t *testing.T) {
	g := NewWithT(t)
	repo := freshName("stall-http") + ".git"
	p, goroutines := startStallProxy(t, testenv.TransportHTTP, repo)
	url := env.Git.StalledHTTPURL(p, repo)
	counted := env.Git.Requests(repo)

	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), stallDeadline)
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		_, err := lsRemote(ctx, url, httpAuth())
		errs <- err
	}()
	g.Eventually(p.Held).Should(Equal(1), "the stalled proxy accepted the connection")
	var err error
	g.Eventually(errs, 2*stallDeadline).Should(Receive(&err))
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(errors.Is(err, syscall.ECONNREFUSED)).To(BeFalse())
	g.Expect(env.Git.Requests(repo)).To(Equal(counted), "a hung server sees nothing")

	p.Resume()
	g.Eventually(p.Held).Should(BeZero())
	dir := t.TempDir()
	_, err = cloneInto(context.Background(), dir, url, httpAuth())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir + "/a.yaml").To(BeARegularFile())

	expectNoLeaks(g, p, goroutines)
	_, err = lsRemote(context.Background(), url, httpAuth())
	g.Expect(errors.Is(err, syscall.ECONNREFUSED)).To(BeTrue(), "a closed proxy refuses: %v", err)
}

// TestStallProxySSHIgnoresTheDeadline pins go-git's SSH transport: it dials
// and completes the SSH handshake without its context (go-git v5.19.1,
// plumbing/transport/ssh.dial), so against a stalled SSH server ls-remote
// does not return at its deadline. Once the proxy resumes, the client
// still starts upload-pack, and only then notices the expired context.
func TestStallProxySSHIgnoresTheDeadline(t *testing.T) {
	g := NewWithT(t)
	repo := freshName("stall-ssh") + ".git"
	p, goroutines := startStallProxy(t, testenv.TransportSSH, repo)
	url := env.Git.StalledSSHURL(p, repo)
	auth := sshAuth(t, env.Git.KnownHostsAt(p.Addr()))

	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), stallDeadline)
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		_, err := lsRemote(ctx, url, auth)
		errs <- err
	}()
	g.Eventually(p.Held).Should(Equal(1))
	<-ctx.Done()
	g.Expect(env.Git.RequestsOver(testenv.TransportSSH, repo)).To(BeZero())

	p.Resume()
	var err error
	g.Eventually(errs, 30*time.Second).Should(Receive(&err))
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(env.Git.RequestsOver(testenv.TransportSSH, repo)).To(Equal(testenv.RequestCounts{UploadPack: 1}),
		"the client ran upload-pack after its deadline, so it was still waiting at the deadline")

	refs, err := lsRemote(context.Background(), url, auth)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).NotTo(BeEmpty())
	expectNoLeaks(g, p, goroutines)
}

func TestStallProxyReleasesHeldConnectionsOnClose(t *testing.T) {
	g := NewWithT(t)
	repo := freshName("stall-close") + ".git"
	p, goroutines := startStallProxy(t, testenv.TransportHTTP, repo)
	p.Stall()

	errs := make(chan error, 1)
	go func() {
		// No deadline: only Close can end this call.
		_, err := lsRemote(context.Background(), env.Git.StalledHTTPURL(p, repo), httpAuth())
		errs <- err
	}()
	raw, err := net.Dial("tcp", p.Addr())
	g.Expect(err).NotTo(HaveOccurred())
	defer raw.Close() //nolint:errcheck // test teardown
	g.Eventually(p.Held).Should(Equal(2))

	expectNoLeaks(g, p, goroutines)
	g.Eventually(errs).Should(Receive(HaveOccurred()))
	// A safety bound only: the proxy has already closed its end.
	g.Expect(raw.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	_, err = raw.Read(make([]byte, 1))
	g.Expect(err).To(MatchError(io.EOF))
}

// TestStallProxyFreezesForwardedConnections proves Stall also hangs a
// connection that was already forwarding, as a reused keep-alive
// connection is, and that Resume delivers what it kept back.
func TestStallProxyFreezesForwardedConnections(t *testing.T) {
	g := NewWithT(t)
	repo := freshName("stall-keepalive") + ".git"
	p, goroutines := startStallProxy(t, testenv.TransportHTTP, repo)
	conn, err := net.Dial("tcp", p.Addr())
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close() //nolint:errcheck // test teardown
	r := bufio.NewReader(conn)
	advertise := func() (*http.Response, error) {
		req := fmt.Sprintf("GET /%s/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: %s\r\n", repo, p.Addr())
		auth := "Authorization: Basic " + basicToken(env.Git.Username, env.Git.Password) + "\r\n\r\n"
		if _, err := io.WriteString(conn, req+auth); err != nil {
			return nil, err
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		return resp, errors.Join(err, resp.Body.Close())
	}
	resp, err := advertise()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	counted := env.Git.Requests(repo)

	p.Stall()
	g.Expect(conn.SetReadDeadline(time.Now().Add(stallDeadline))).To(Succeed())
	_, err = advertise()
	g.Expect(err).To(MatchError(os.ErrDeadlineExceeded))
	g.Expect(env.Git.Requests(repo)).To(Equal(counted), "the request was kept back")

	p.Resume()
	g.Expect(conn.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	resp, err = http.ReadResponse(r, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Body.Close()).To(Succeed())
	g.Expect(env.Git.Requests(repo).Sub(counted)).To(Equal(testenv.RequestCounts{UploadPack: 1}))
	expectNoLeaks(g, p, goroutines)
}

func basicToken(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// networkGoroutines counts the goroutines of this package's servers and
// of the git clients' connections. Only these are compared before and
// after a test: the shared environment runs others (kube-apiserver's audit
// posts, for one) that come and go on their own.
func networkGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range []string{"reflux/internal/testenv.(*", "go-git/go-git", "net/http.(*persistConn)", "golang.org/x/crypto/ssh."} {
			if strings.Contains(g, marker) {
				count++
				break
			}
		}
	}
	return count
}
