package main

import (
	"context"
	"strings"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// showNext prints what a newcomer can try on the running demo, with the
// names this run produced, so each command can be copied as printed.
func (d *demo) showNext(context.Context) error {
	p := &printer{w: d.opts.out}
	flag, replicas := d.scenario.flagRecord, d.scenario.replicasRecord
	p.line("")
	if d.opts.exit == exitAfterScenario {
		p.line("What to try next, on a demo left running by plain `make demo` (this one exits now):")
	} else {
		p.line("What to try next (in another terminal):")
	}
	p.line("  export KUBECONFIG=%s", d.env.KubeconfigPath)
	if dir := d.kubectlDir(); dir != "" {
		p.line("  export PATH=%s:$PATH", dir)
	}
	p.line("")
	p.line("  Look at a record in full:")
	p.line("    kubectl -n %s get drift %s -o yaml", flag.Namespace, flag.Name)
	p.line("")
	p.line("  Roll the image back by hand; the policy's image-rollback rule makes it a high Alert:")
	p.line("    kubectl -n %s edit deploy/%s   # set the image tag to 6.7.0", appNamespace, appName)
	p.line("")
	p.line("  The flag's pull request, merged, and the Deployment's draft one, waiting for a decision:")
	p.line("    %s", d.scenario.merged.URL)
	p.line("    %s   (sign in as %s, password %s)", replicas.Status.PullRequest, d.gitea.Username, d.gitea.Password)
	p.line("")
	p.line("  Reject the Deployment's Alert: close its pull request in Gitea, or dismiss the record.")
	p.line("  reflux releases the hold (and deletes the branch of a closed pull request), and Flux")
	p.line("  puts %d replicas back at its next reconcile (every %s, or now with the last command):", d.scenario.oldReplicas, short(kustomizationInterval))
	p.line("    curl -u %s:%s -X PATCH -H 'Content-Type: application/json' -d '{\"state\":\"closed\"}' \\",
		d.gitea.Username, d.gitea.Password)
	p.line("      %s/api/v1/repos%s", d.gitea.URL, strings.TrimPrefix(replicas.Status.PullRequest, d.gitea.URL))
	p.line("    kubectl -n %s annotate drift %s %s=true   # or this, instead", replicas.Namespace, replicas.Name, refluxv1.DismissAnnotation)
	p.line("    kubectl -n %s annotate kustomization %s --overwrite reconcile.fluxcd.io/requestedAt=\"$(date +%%s)\"",
		fluxNamespace, appName)
	p.line("")
	p.line("  Review by hand: the flag's change is on main now.")
	p.line("    git clone %s review", d.httpCloneURL())
	return nil
}
