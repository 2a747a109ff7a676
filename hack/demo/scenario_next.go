package main

import (
	"context"

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
	p.line("  Dismiss the Deployment's Alert: reflux releases the hold and Flux puts %d replicas back", d.scenario.oldReplicas)
	p.line("  at its next reconcile (every %s, or now with the second command):", short(kustomizationInterval))
	p.line("    kubectl -n %s annotate drift %s %s=true", replicas.Namespace, replicas.Name, refluxv1.DismissAnnotation)
	p.line("    kubectl -n %s annotate kustomization %s --overwrite reconcile.fluxcd.io/requestedAt=\"$(date +%%s)\"",
		fluxNamespace, appName)
	p.line("")
	p.line("  Merge the flag as a reviewer: once Flux applies main (within about %s), the record", short(sourceInterval+kustomizationInterval))
	p.line("  becomes Resolved and reflux deletes its branch. Or delete the branch unmerged: the")
	p.line("  record is Dismissed and Flux removes the flag.")
	p.line("    git clone %s review && cd review", d.httpCloneURL())
	p.line("    git merge --no-ff -m 'Turn on %s' origin/%s && git push origin main", hotfixFlag, flag.Status.Branch)
	p.line("    git push origin --delete %s   # instead, to reject it", flag.Status.Branch)
	return nil
}
