package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Process is a long-running child of the environment, such as a Flux
// controller. Its stdout and stderr go to LogPath.
type Process struct {
	// Name identifies the process in errors and logs.
	Name string
	// LogPath is the file holding the process's combined output.
	LogPath string
	// HealthAddr is the loopback host:port serving /readyz and /healthz.
	HealthAddr string
	// MetricsAddr is the loopback host:port serving /metrics.
	MetricsAddr string

	cmd      *exec.Cmd
	logFile  *os.File
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// startProcess starts bin with args and env, sending its output to a log
// file in logDir. It does not wait for readiness.
func startProcess(name, bin string, args, env []string, logDir string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating log for %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", name, err), logFile.Close())
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls /readyz on the health address until it answers 200. It
// gives up at once if the process exits, since a crashed controller will
// never become ready and its log says why.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	url := "http://" + p.HealthAddr + "/readyz"
	httpClient := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			if p.exited() {
				return false, fmt.Errorf("%s exited: %v (log: %s)", p.Name, p.waitErr, p.LogPath)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return false, fmt.Errorf("building readiness request: %w", err)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				return false, nil // not listening yet
			}
			_ = resp.Body.Close() // status is all we read
			return resp.StatusCode == http.StatusOK, nil
		})
	if err != nil {
		return fmt.Errorf("waiting for %s to be ready at %s: %w", p.Name, url, err)
	}
	return nil
}

// portAttempts bounds how often a process that lost a reserved port is
// started again.
const portAttempts = 3

// readyOrRestart waits until p is ready. When p exited because a port
// reserved for it was taken first, it is started again with start, on
// fresh ports: freeAddrs can hold a port only until the process starts,
// and in make test another package's process may bind it meanwhile (seen
// in CI as source-controller failing to bind its health port). It
// returns the process it waited for, to stop whatever happened.
func readyOrRestart(ctx context.Context, timeout time.Duration, p *Process, start func() (*Process, error)) (*Process, error) {
	for attempt := 1; ; attempt++ {
		err := p.waitReady(ctx, timeout)
		if err == nil || attempt == portAttempts || !p.lostPort() {
			return p, err
		}
		if err := p.Stop(0); err != nil {
			return p, err
		}
		if p, err = start(); err != nil {
			return nil, err
		}
	}
}

// lostPort reports whether p exited because an address it was to listen
// on was in use.
func (p *Process) lostPort() bool {
	if !p.exited() {
		return false
	}
	b, err := os.ReadFile(p.LogPath)
	return err == nil && bytes.Contains(b, []byte("address already in use"))
}

// Stop asks the process to end with SIGTERM, so controllers release their
// watches as in a real rollout, and kills it if it is still running after
// grace. A process that already ended is not an error here: its log holds
// the reason, and readiness waits report early exits. Stopping twice
// returns the first result.
func (p *Process) Stop(grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(grace) })
	return p.stopErr
}

func (p *Process) stop(grace time.Duration) error {
	if p.exited() {
		return p.logFile.Close()
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
	case <-time.After(grace):
		if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("killing %s after %s: %w", p.Name, grace, err)
		}
		<-p.done
	}
	return p.logFile.Close()
}

// Kill sends SIGKILL and waits until the process is gone. It leaves the
// log open for Stop to close, so Stop after Kill is harmless.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s: %w", p.Name, err)
	}
	<-p.done
	return nil
}

// Done is closed when the process has ended, for whatever reason.
func (p *Process) Done() <-chan struct{} {
	return p.done
}

// ExitErr is how the process ended (nil for exit code 0); it is only
// meaningful once Done is closed.
func (p *Process) ExitErr() error {
	<-p.done
	return p.waitErr
}

// Log returns everything the process has written so far.
func (p *Process) Log() ([]byte, error) {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return nil, fmt.Errorf("reading log of %s: %w", p.Name, err)
	}
	return b, nil
}
