//go:build unix

package writeback

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
	"github.com/reflux-dev/reflux/reverse/writeback/internal/testkeys"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
	"github.com/reflux-dev/reflux/reverse/writeback/signing"
)

// The child process of a crash test learns its write-back from these.
const (
	envCrashChild    = "REFLUX_CRASH_CHILD"
	envCrashCache    = "REFLUX_CRASH_CACHE"
	envCrashURL      = "REFLUX_CRASH_URL"
	envCrashUsername = "REFLUX_CRASH_USERNAME"
	envCrashPassword = "REFLUX_CRASH_PASSWORD"
	envCrashKey      = "REFLUX_CRASH_KEY"
)

const (
	// exitPushedUnreported is the child's exit code after a push whose
	// result it never reported.
	exitPushedUnreported = 42
	// crashWait bounds every wait on the child.
	crashWait    = time.Minute
	crashKeyPass = "pass"
	crashBranch  = "reflux/flux-system-apps/111111111111"
)

// TestCrashBetweenCommitAndPush kills the write-back with SIGKILL once its
// signed commit exists in the cache clone but before the push reaches the
// server (issue 5). The next process, with the clone left behind or with a
// new pod's empty cache, pushes the change exactly once.
func TestCrashBetweenCommitAndPush(t *testing.T) {
	for _, tt := range []struct {
		name   string
		newPod bool
	}{{name: "same cache"}, {name: "new pod", newPod: true}} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := newCrashRig(t, gateBeforePush)
			child := r.start()
			child.waitHeld(t, r.gate)
			child.kill(t)
			r.gate.fail()

			g.Expect(r.refluxBranches()).To(BeEmpty(), "the push never reached the server")
			clone := r.clone()
			orphan := strings.TrimSpace(gitserver.Git(t, clone, "rev-parse", "HEAD"))
			msg := gitserver.Git(t, clone, "log", "-1", "--format=%B", orphan)
			g.Expect(message.TrailerValue(msg, message.TrailerFingerprint)).To(Equal(fp1), "the commit is in the cache clone")
			g.Expect(r.serverHas(orphan)).To(BeFalse())
			marker := filepath.Join(clone, ".git", "crash-test-marker")
			g.Expect(os.WriteFile(marker, nil, 0o600)).To(Succeed())
			if tt.newPod {
				g.Expect(os.RemoveAll(r.cache)).To(Succeed())
			}

			res := r.run()
			g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
			r.expectOneCommit(g, res)
			_, err := os.Stat(marker)
			g.Expect(err == nil).To(Equal(!tt.newPod), "the restart reuses the clone it finds: %v", err)

			again := r.run()
			g.Expect(again.Outcome).To(Equal(UpToDate), again.Reason)
			g.Expect(again.Commit).To(Equal(res.Commit))
			r.expectOneCommit(g, again)
		})
	}
}

// TestCrashBetweenPushAndStatus loses the result of a push that reached the
// server: the child exits right after Run without reporting it, or is
// killed while the server's acknowledgement is held. Nothing outside git
// knows of the push; the next run finds the branch and reports it UpToDate.
func TestCrashBetweenPushAndStatus(t *testing.T) {
	tests := []struct {
		name   string
		mode   gateMode
		newPod bool
	}{
		{name: "exit after run", mode: gateOpen},
		{name: "exit after run, new pod", mode: gateOpen, newPod: true},
		{name: "killed before the push was acknowledged", mode: gateBeforeAck},
		{name: "killed before the push was acknowledged, new pod", mode: gateBeforeAck, newPod: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := newCrashRig(t, tt.mode)
			child := r.start()
			if tt.mode == gateBeforeAck {
				child.waitHeld(t, r.gate)
				g.Expect(r.gate.ackCode).To(Equal(200), "the server took the push")
				child.kill(t)
				r.gate.fail()
			} else {
				child.expectExit(t, exitPushedUnreported)
			}
			pushed := r.refluxBranches()
			g.Expect(pushed).To(HaveKey(crashBranch))
			g.Expect(pushed).To(HaveLen(1))
			if tt.newPod {
				g.Expect(os.RemoveAll(r.cache)).To(Succeed())
			}

			res := r.run()
			g.Expect(res.Outcome).To(Equal(UpToDate), res.Reason)
			g.Expect(res.Commit).To(Equal(pushed[crashBranch]))
			r.expectOneCommit(g, res)

			again := r.run()
			g.Expect(again.Outcome).To(Equal(UpToDate), again.Reason)
			g.Expect(again.Commit).To(Equal(res.Commit))
			r.expectOneCommit(g, again)
		})
	}
}

// TestCrashTornCacheWrite restarts on a clone left torn by a kill. go-git
// rewrites ref files and the index in place, truncating them first, so a
// SIGKILL at the wrong instant leaves an empty file. That instant cannot be
// hit from outside, so the test empties the file itself. The cache is
// disposable: the restart must not fail on it forever.
func TestCrashTornCacheWrite(t *testing.T) {
	for _, file := range []string{"refs/remotes/origin/main", "refs/remotes/origin/" + crashBranch, "index"} {
		t.Run(file, func(t *testing.T) {
			g := NewWithT(t)
			r := newCrashRig(t, gateOpen)
			r.start().expectExit(t, exitPushedUnreported)
			pushed := r.refluxBranches()[crashBranch]
			torn := filepath.Join(r.clone(), ".git", filepath.FromSlash(file))
			g.Expect(torn).To(BeARegularFile())
			g.Expect(os.Truncate(torn, 0)).To(Succeed())

			res := r.run()
			g.Expect(res.Outcome).To(Equal(UpToDate), res.Reason)
			g.Expect(res.Commit).To(Equal(pushed))
			r.expectOneCommit(g, res)
		})
	}
}

// TestCrashChild is the write-back the crash tests kill. It runs only in a
// child process started by crashRig.start.
func TestCrashChild(t *testing.T) {
	if os.Getenv(envCrashChild) != "1" {
		t.Skip("runs only as the child process of a crash test")
	}
	secret := map[string][]byte{
		"username": []byte(os.Getenv(envCrashUsername)),
		"password": []byte(os.Getenv(envCrashPassword)),
	}
	req, err := newRequest(os.Getenv(envCrashURL), secret, fp1, setReplicas(5))
	if err != nil {
		t.Fatal(err)
	}
	req.Signer = crashSigner(t, os.Getenv(envCrashKey))
	res, err := newEngine(t, os.Getenv(envCrashCache)).Run(context.Background(), req)
	if err != nil || res.Outcome != BranchPushed {
		t.Fatalf("write-back: %+v: %v", res, err)
	}
	// Gone before anyone could record the result, as a controller killed
	// before its status write: only the remote knows of the push.
	os.Exit(exitPushedUnreported)
}

// crashRig is a git server behind a pushGate, a signing key and a cache
// directory shared by the child and the runs after it.
type crashRig struct {
	t    *testing.T
	f    *fixture
	gate *pushGate
	// url reaches the repository through the gate; the cache clone is
	// keyed by it, so every run must use it.
	url    string
	cache  string
	key    string
	pub    []byte
	signer signing.Signer
}

func newCrashRig(t *testing.T, mode gateMode) *crashRig {
	t.Helper()
	f := newFixture(t, gitserver.StartHTTP)
	gate, base := startPushGate(t, f.srv.HTTPAddress(), mode)
	priv, pub := testkeys.OpenPGP(t, reflux.Name, reflux.Email, crashKeyPass)
	key := filepath.Join(t.TempDir(), "signing.asc")
	if err := os.WriteFile(key, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	return &crashRig{t: t, f: f, gate: gate, url: base + "/" + repoName,
		cache: filepath.Join(t.TempDir(), "cache"), key: key, pub: pub, signer: crashSigner(t, key)}
}

func crashSigner(t *testing.T, keyFile string) signing.Signer {
	t.Helper()
	priv, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signing.FromSecret(map[string][]byte{signing.KeyOpenPGP: priv, signing.KeyPassphrase: []byte(crashKeyPass)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run is a restarted controller: a fresh engine on the shared cache.
func (r *crashRig) run() Result {
	r.t.Helper()
	req, err := newRequest(r.url, r.f.srv.SecretData, fp1, setReplicas(5))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Signer = r.signer
	res, err := newEngine(r.t, r.cache).Run(context.Background(), req)
	if err != nil {
		r.t.Fatalf("write-back: %+v: %v", res, err)
	}
	return res
}

// clone is the cache directory of the repository's clone.
func (r *crashRig) clone() string {
	return newEngine(r.t, r.cache).dir(r.url)
}

func (r *crashRig) serverHas(commit string) bool {
	return exec.Command("git", "-C", filepath.Join(r.f.srv.Root(), repoName), "cat-file", "-e", commit+"^{commit}").Run() == nil
}

// refluxBranches maps the server's reflux branches to their heads.
func (r *crashRig) refluxBranches() map[string]string {
	out := r.f.gitOut("for-each-ref", "--format=%(refname:lstrip=2) %(objectname)", "refs/heads/reflux/")
	heads := map[string]string{}
	for line := range strings.Lines(out) {
		name, hash, _ := strings.Cut(strings.TrimSpace(line), " ")
		heads[name] = hash
	}
	return heads
}

// expectOneCommit asserts that the server holds res as the only reflux
// branch with a single signed reflux commit on top of main, and nothing
// else beyond main.
func (r *crashRig) expectOneCommit(g Gomega, res Result) {
	r.t.Helper()
	g.Expect(res.Branch).To(Equal(crashBranch))
	g.Expect(r.refluxBranches()).To(Equal(map[string]string{crashBranch: res.Commit}))
	g.Expect(r.f.gitOut("rev-list", "--all", "--not", "refs/heads/main")).To(Equal(res.Commit),
		"exactly one commit beyond main on the server")
	g.Expect(r.f.gitOut("rev-parse", res.Commit+"^")).To(Equal(r.f.srv.Head(r.t, repoName, "main")))
	msg := r.f.gitOut("log", "-1", "--format=%B", res.Commit)
	g.Expect(message.TrailerValue(msg, message.TrailerFingerprint)).To(Equal(fp1))
	g.Expect(r.f.show(res.Commit, webFile)).To(Equal("replicas: 5\nimage: web:1.0\n"))
	g.Expect(testkeys.GitVerifyPGP(r.t, filepath.Join(r.f.srv.Root(), repoName), res.Commit, r.pub)).
		To(ContainSubstring("Good signature"))
}

// crashChild is the test binary re-executed to run TestCrashChild.
type crashChild struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (r *crashRig) start() *crashChild {
	r.t.Helper()
	c := &crashChild{done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.timeout="+crashWait.String())
	c.cmd.Env = append(os.Environ(),
		envCrashChild+"=1",
		envCrashCache+"="+r.cache,
		envCrashURL+"="+r.url,
		envCrashUsername+"="+gitserver.Username,
		envCrashPassword+"="+gitserver.Password,
		envCrashKey+"="+r.key,
	)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	r.t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// waitHeld returns once the child's push is held by gate.
func (c *crashChild) waitHeld(t *testing.T, gate *pushGate) {
	t.Helper()
	select {
	case <-gate.held:
	case <-c.done:
		t.Fatalf("the child exited before its push was held: %v\n%s", c.err, c.out.String())
	case <-time.After(crashWait):
		t.Fatalf("no push within %s", crashWait)
	}
}

// kill sends SIGKILL: no deferred call, no cleanup, no last word.
func (c *crashChild) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.wait(t)
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended by itself (%v), not by SIGKILL\n%s", c.err, c.out.String())
	}
}

func (c *crashChild) expectExit(t *testing.T, code int) {
	t.Helper()
	c.wait(t)
	if got := c.cmd.ProcessState.ExitCode(); got != code {
		t.Fatalf("the child exited with %d, want %d\n%s", got, code, c.out.String())
	}
}

func (c *crashChild) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(crashWait):
		t.Fatalf("the child did not exit within %s", crashWait)
	}
}
