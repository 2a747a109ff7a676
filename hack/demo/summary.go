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
	p.section("Gitea (branch main, commit %s)", shortRev(d.revision))
	p.line("  %s   sign in as %s, password %s", d.repoWebURL(), d.gitea.Username, d.gitea.Password)
	p.line("  %s/pulls   reflux's pull requests", d.repoWebURL())
	p.line("  git clone %s", d.httpCloneURL())
	p.line("  reflux signs as %s <%s>; Gitea knows the key, or check its commits with: gpg --import %s",
		authorName, authorEmail, d.keys.signingPub)
	p.section("reflux")
	p.line("  policy %s/%s: %s", d.policy.Namespace, d.policy.Name, describe(readyCondition(d.policy)))
	p.line("  health  http://%s/readyz", d.reflux.HealthAddr)
	p.line("  metrics http://%s/metrics", d.reflux.MetricsAddr)
	p.section("Logs")
	p.line("  reflux: %s", d.refluxLogPath())
	for _, path := range d.env.LogPaths() {
		p.line("  %s: %s", strings.TrimSuffix(filepath.Base(path), ".log"), path)
	}
	p.line("  gitea: %s", d.gitea.Process.LogPath)
	p.line("")
}

// repoWebURL is the app repository's page in Gitea.
func (d *demo) repoWebURL() string {
	return d.gitea.URL + "/" + d.gitea.Username + "/" + repoName
}

// httpCloneURL is the HTTP URL with Gitea's basic-auth credentials in
// it, so a copied `git clone` just works.
func (d *demo) httpCloneURL() string {
	raw := d.repoWebURL() + ".git"
	u, err := url.Parse(raw)
	if err != nil {
		return raw + fmt.Sprintf(" (user %s, password %s)", d.gitea.Username, d.gitea.Password)
	}
	u.User = url.UserPassword(d.gitea.Username, d.gitea.Password)
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
