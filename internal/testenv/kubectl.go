package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Kubectl runs kubectl as the admin user and returns its stdout. Tests use
// it where the exact client matters: kubectl picks its own field manager
// names (kubectl-edit, kubectl-scale, ...) and subresources, which Flux
// treats specially. bin/kubectl is preferred, then the one on PATH.
func (e *Env) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return e.KubectlAs(ctx, User{Name: "admin", KubeconfigPath: e.KubeconfigPath}, args...)
}

// KubectlAs runs kubectl as u, such as an on-call engineer whose
// `kubectl set image` a journey wants attributed to them.
func (e *Env) KubectlAs(ctx context.Context, u User, args ...string) ([]byte, error) {
	return e.kubectl(ctx, u, nil, args)
}

// KubectlEditAs runs `kubectl edit` as u with editor as KUBE_EDITOR: an
// executable that kubectl calls with the object's file, as a person's
// editor would be, and that changes it in place.
func (e *Env) KubectlEditAs(ctx context.Context, u User, editor string, args ...string) ([]byte, error) {
	return e.kubectl(ctx, u, []string{"KUBE_EDITOR=" + editor}, append([]string{"edit"}, args...))
}

func (e *Env) kubectl(ctx context.Context, u User, extraEnv, args []string) ([]byte, error) {
	bin, err := binaryPath(e.opts.BinDir, "kubectl")
	if err != nil {
		if bin, err = exec.LookPath("kubectl"); err != nil {
			return nil, fmt.Errorf("kubectl not in %s nor on PATH: %w", e.opts.BinDir, ErrMissingBinary)
		}
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", u.KubeconfigPath}, args...)...)
	if cmd.Env, err = childEnv(filepath.Join(e.Dir, "kubectl"), u.KubeconfigPath); err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("kubectl %v: %w: %s", args, err, stderr.String())
	}
	return stdout.Bytes(), nil
}
