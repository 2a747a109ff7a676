package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// startReflux installs reflux as a user does (`kubectl apply -k
// config/default`: its CRDs, ServiceAccount, roles and bindings) and runs
// bin/reflux as that ServiceAccount, with a token minted for it, so it has
// exactly the permissions config/rbac grants. The process is testenv's,
// the same supervisor the e2e journeys use.
func (d *demo) startReflux(ctx context.Context) error {
	p, err := testenv.StartReflux(ctx, d.env, testenv.RefluxOptions{
		Binary:       d.opts.refluxBin,
		Name:         refluxName,
		StartTimeout: readinessTimeout,
		StopGrace:    refluxStopGrace,
		AuditWebhook: true,
		Args: []string{
			"--watch-all-namespaces=true",
			"--log-level=debug",
			// Gitea speaks plain HTTP on loopback.
			"--insecure-allow-http",
		},
	})
	if err != nil {
		return err
	}
	d.reflux = p
	return nil
}

// refluxName names reflux's process and so its log, Env.Dir/reflux.log.
const refluxName = "reflux"

// refluxLogPath is where reflux writes, beside the other components' logs.
func (d *demo) refluxLogPath() string {
	return filepath.Join(d.env.Dir, refluxName+".log")
}

// refluxLogs is reflux's log, which explains a manager that never became
// ready or a policy that never did.
func (d *demo) refluxLogs() []string {
	if d.env == nil {
		return nil
	}
	return []string{d.refluxLogPath()}
}

// errRefluxExited stops a wait when reflux is gone: its log says why.
var errRefluxExited = errors.New("reflux exited")

// refluxGone returns errRefluxExited, with how reflux ended, once it has.
func (d *demo) refluxGone() error {
	select {
	case <-d.reflux.Done():
		return fmt.Errorf("%w: %v", errRefluxExited, d.reflux.ExitErr())
	default:
		return nil
	}
}

// watchReflux blocks until ctx ends or reflux dies. A death is reported
// as it happens, with the tail of reflux's log, rather than left for the
// user to find in a demo that silently stopped reacting.
func (d *demo) watchReflux(ctx context.Context, out io.Writer) error {
	select {
	case <-ctx.Done():
		return nil
	case <-d.reflux.Done():
		err := d.refluxGone()
		fmt.Fprintf(out, "reflux died: %s\n", oneLine(err))
		printTails(out, d.refluxLogs())
		return err
	}
}

// readyz asks a health endpoint once.
func readyz(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
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
