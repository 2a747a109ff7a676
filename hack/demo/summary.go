package main

import (
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// printSummary tells the user how to reach everything the setup started.
// README's Quick start quotes it; keep the two in step.
func (d *demo) printSummary(w io.Writer) {
	p := &printer{w: w}
	p.line("")
	p.line("reflux demo is up. Everything below lives in %s and is removed when the demo stops.", d.home())
	p.section("Cluster (kube-apiserver with real Flux; no scheduler, so Deployments get no pods)")
	p.line("  export KUBECONFIG=%s", d.env.KubeconfigPath)
	if dir := d.kubectlDir(); dir != "" {
		p.line("  export PATH=%s:$PATH", dir)
	}
	p.line("  kubectl get kustomizations,gitrepositories -A")
	p.line("  kubectl get rsp,drifts -A")
	p.line("  kubectl -n %s get deploy,svc,configmap", appNamespace)
	p.line("  kubectl -n %s edit deploy/%s            # the 2 AM hotfix", appNamespace, appName)
	p.line("  kubectl -n %s edit configmap/%s-flags   # a new feature flag", appNamespace, appName)
	p.line("  Flux re-applies %s from %s every %s.", appPath, repoPath, short(kustomizationInterval))
	p.section("Git (branch main, commit %s)", shortRev(d.revision))
	p.line("  git clone %s", d.httpCloneURL())
	p.line("  GIT_SSH_COMMAND='ssh -i %s -o UserKnownHostsFile=%s -o IdentitiesOnly=yes' \\",
		d.keys.sshIdentity, d.keys.sshKnownHosts)
	p.line("    git clone %s", d.env.Git.SSHURL(repoPath))
	p.line("  reflux signs as %s <%s>; to check its commits: gpg --import %s", authorName, authorEmail, d.keys.signingPub)
	p.section("reflux")
	p.line("  policy %s/%s: %s", d.policy.Namespace, d.policy.Name, describe(readyCondition(d.policy)))
	p.line("  health  http://%s/readyz", d.reflux.HealthAddr)
	p.line("  metrics http://%s/metrics", d.reflux.MetricsAddr)
	p.section("Logs")
	p.line("  reflux: %s", d.refluxLogPath())
	for _, path := range d.env.LogPaths() {
		p.line("  %s: %s", strings.TrimSuffix(filepath.Base(path), ".log"), path)
	}
	if d.opts.gitLogPath != "" {
		p.line("  git server: %s", d.opts.gitLogPath)
	}
	p.line("")
}

// httpCloneURL is the HTTP URL with the git server's basic-auth
// credentials in it, so a copied `git clone` just works.
func (d *demo) httpCloneURL() string {
	u, err := url.Parse(d.env.Git.HTTPURL(repoPath))
	if err != nil {
		return d.env.Git.HTTPURL(repoPath) + fmt.Sprintf(" (user %s, password %s)", d.env.Git.Username, d.env.Git.Password)
	}
	u.User = url.UserPassword(d.env.Git.Username, d.env.Git.Password)
	return u.String()
}

// kubectlDir is bin/ when kubectl is not on PATH but `make testbin`
// built one there, and empty otherwise.
func (d *demo) kubectlDir() string {
	if _, err := exec.LookPath("kubectl"); err == nil {
		return ""
	}
	dir := filepath.Join(d.opts.repoRoot, "bin")
	if executable(filepath.Join(dir, "kubectl")) != nil {
		return ""
	}
	return dir
}

// home is the directory holding everything the demo wrote.
func (d *demo) home() string {
	if d.opts.workDir != "" {
		return d.opts.workDir
	}
	return d.env.Dir
}

// short drops a duration's zero tail: 1m rather than 1m0s.
func short(t time.Duration) string {
	s := t.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	return s
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// printer writes the summary; a terminal write error leaves nothing to
// report it to, so it is ignored.
type printer struct{ w io.Writer }

func (p *printer) line(format string, args ...any) {
	_, _ = fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *printer) section(format string, args ...any) {
	p.line("")
	p.line(format, args...)
}
