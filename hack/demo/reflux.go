package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// startReflux runs bin/reflux as its own user, so audit events and
// managedFields name reflux rather than the admin a user's kubectl acts as.
// The user is in system:masters because the demo does not install
// config/rbac; a real installation runs with that least-privilege role.
func (d *demo) startReflux(ctx context.Context) error {
	user, err := d.env.AddUser(refluxUser, "system:masters")
	if err != nil {
		return err
	}
	// reflux keeps the key that seals its Drift records in its own
	// namespace, which config/default would create.
	if err := d.env.CreateNamespace(ctx, testenv.RefluxNamespace); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	p, err := launchReflux(refluxConfig{
		bin:        d.opts.refluxBin,
		home:       filepath.Join(d.env.Dir, "reflux"),
		logPath:    d.refluxLogPath(),
		kubeconfig: user.KubeconfigPath,
		auditAddr:  d.env.AuditWebhookAddr,
	})
	if err != nil {
		return err
	}
	d.reflux = p
	return p.waitReady(ctx, readinessTimeout)
}

// refluxLogPath is where reflux writes, beside the other components' logs.
func (d *demo) refluxLogPath() string {
	return filepath.Join(d.env.Dir, "reflux.log")
}

// refluxLogs is reflux's log, which explains a manager that never became
// ready or a policy that never did.
func (d *demo) refluxLogs() []string {
	if d.env == nil {
		return nil
	}
	return []string{d.refluxLogPath()}
}

// refluxProcess is `reflux manager` running as a child of the demo, with
// its output in logPath.
type refluxProcess struct {
	logPath     string
	healthAddr  string
	metricsAddr string

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	waitErr error
}

// refluxConfig says where and as whom reflux runs.
type refluxConfig struct {
	// bin is the reflux binary.
	bin string
	// home is reflux's HOME; its caches and clones live under it.
	home string
	// logPath receives stdout and stderr.
	logPath string
	// kubeconfig connects to the demo's apiserver.
	kubeconfig string
	// auditAddr is where the apiserver's audit webhook posts; reflux
	// serves /audit there.
	auditAddr string
}

// launchReflux starts `reflux manager` with Flux's standard flags on
// loopback ports. It does not wait for readiness.
func launchReflux(cfg refluxConfig) (*refluxProcess, error) {
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.home, 0o700); err != nil {
		return nil, fmt.Errorf("creating reflux home: %w", err)
	}
	logFile, err := os.Create(cfg.logPath)
	if err != nil {
		return nil, fmt.Errorf("creating reflux log: %w", err)
	}
	cmd := exec.Command(cfg.bin, "manager",
		"--metrics-addr="+addrs[0],
		"--health-addr="+addrs[1],
		"--enable-leader-election=false",
		"--watch-all-namespaces=true",
		"--log-level=debug",
		"--log-encoding=console",
		"--audit-addr="+cfg.auditAddr,
	)
	cmd.Env = refluxEnv(cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", cfg.bin, err), logFile.Close())
	}
	p := &refluxProcess{
		logPath: cfg.logPath, metricsAddr: addrs[0], healthAddr: addrs[1],
		cmd: cmd, logFile: logFile, done: make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// refluxEnv is reflux's whole environment. Nothing is inherited, so a
// developer's KUBECONFIG or proxy settings cannot point it at a real
// cluster.
func refluxEnv(cfg refluxConfig) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + cfg.home,
		"XDG_CACHE_HOME=" + filepath.Join(cfg.home, ".cache"),
		"KUBECONFIG=" + cfg.kubeconfig,
		"NO_PROXY=127.0.0.1,localhost",
	}
}

// errExited stops the readiness poll when reflux is gone.
var errExited = errors.New("reflux exited")

// exited reports whether the process has ended.
func (p *refluxProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls /readyz until it answers 200, and gives up at once if
// reflux exits: its log then says why.
func (p *refluxProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			if p.exited() {
				return false, errExited
			}
			last = p.readyz(ctx)
			return last == nil, nil
		})
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("reflux exited before /readyz answered: %v", p.waitErr)
	case err != nil:
		return fmt.Errorf("waiting for reflux at http://%s/readyz (last answer: %v): %w", p.healthAddr, last, err)
	}
	return nil
}

// readyz asks reflux's health endpoint once.
func (p *refluxProcess) readyz(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.healthAddr+"/readyz", nil)
	if err != nil {
		return fmt.Errorf("building readiness request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close() // the status is all we read
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s", resp.Status)
	}
	return nil
}

// stop sends SIGTERM, which reflux handles like a rollout (it releases its
// watches and exits), and kills it after grace. Stopping a process that
// already exited only closes its log.
func (p *refluxProcess) stop(grace time.Duration) error {
	if !p.exited() {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("signalling reflux: %w", err)
		}
		select {
		case <-p.done:
		case <-time.After(grace):
			if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				return fmt.Errorf("killing reflux after %s: %w", grace, err)
			}
			<-p.done
		}
	}
	if err := p.logFile.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("closing reflux log: %w", err)
	}
	return nil
}

// freeAddrs reserves n distinct loopback ports, held open together so the
// kernel cannot hand out one twice.
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserving a loopback port: %w", err)
		}
		defer l.Close() //nolint:errcheck // only reserving
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
