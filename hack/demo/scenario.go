package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// The hotfix the scenario makes: a person turns on a new feature flag and
// scales the app up, the way `kubectl edit` does it (a plain Update under
// field manager kubectl-edit). The demo policy merges the flag back to
// Git and alerts on the replicas, which no rule covers (a low Alert by
// reflux's built-in defaults).
const (
	oncallUser = "oncall@example.com"
	// oncallGroup is bound to cluster-admin, as a break-glass role is;
	// only the demo's own admin client is in system:masters.
	oncallGroup    = testenv.BreakGlassGroup
	hotfixManager  = "kubectl-edit"
	flagsName      = appName + "-flags"
	hotfixFlag     = "FEATURE_DARK_MODE"
	hotfixValue    = "true"
	hotfixReplicas = int32(5)
	flagPointer    = "/data/" + hotfixFlag
	replicasPtr    = "/spec/replicas"
)

// Bounds on the scenario's waits. Recording and holding take a second or
// two; the proposal needs a clone, an edit, a signature and a push. Naming
// the user waits on the audit log, which a loaded machine's apiserver
// delivers seconds late.
const (
	scenarioPoll    = 250 * time.Millisecond
	recordTimeout   = 2 * time.Minute
	proposalTimeout = 90 * time.Second
)

// scenarioSteps act on the running environment after setup and the
// summary, to show reflux at work on a 2 AM hotfix: the edit, the Drift
// records, Flux leaving the held objects alone, the signed branch and pull
// request reflux opens, and a reviewer's merge resolving the record. Each step relies on the ones before it, and each wait is
// a bounded poll whose failure names what was still missing.
func (d *demo) scenarioSteps() []step {
	return []step{
		{name: "make a 2 AM hotfix as " + oncallUser, run: d.makeHotfix},
		{name: "wait for reflux to record and hold the drift", run: d.showDrift, logs: d.refluxLogs},
		{name: "scale the cache a HelmRelease deploys and trace it through the chart", run: d.scaleCache, logs: d.refluxLogs},
		{name: "force a Flux reconcile and check the hotfix survived", run: d.reconcileFlux, logs: d.fluxLogs},
		{name: "wait for reflux to open its pull requests and review the flag change", run: d.showProposal, logs: d.refluxLogs},
		{name: "merge the flag's pull request in Gitea and wait for Resolved", run: d.mergeFlag, logs: d.mergeLogs},
		{name: "show what to try next", run: d.showNext},
	}
}

// scenarioState is what the scenario steps learn, in the order they
// learn it.
type scenarioState struct {
	// oldReplicas is the live replica count before the hotfix: Git's.
	oldReplicas int32
	// flagRecord and replicasRecord are the Drift records of the two
	// edited objects, as last read.
	flagRecord, replicasRecord *refluxv1.Drift
	// cacheRecord is the record of the chart's Deployment, once it names
	// its values line.
	cacheRecord *refluxv1.Drift
	// checkout is a clone of the proposed branch.
	checkout string
	// signature is gpg's verdict on the branch head, as `git verify-commit`
	// printed it.
	signature string
	// giteaVerified is Gitea's verdict on the same commit.
	giteaVerified bool
	// merged is the flag's pull request, once the reviewer merged it.
	merged *pullRequest
}

// makeHotfix edits the flags ConfigMap and the Deployment as oncallUser,
// with the field manager `kubectl edit` uses, so the apiserver's audit
// events name a person and managedFields name kubectl.
func (d *demo) makeHotfix(ctx context.Context) error {
	c, err := d.oncall(ctx)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: appNamespace, Name: flagsName}
	if err := editAs(ctx, c, key, &corev1.ConfigMap{}, func(cm *corev1.ConfigMap) {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[hotfixFlag] = hotfixValue
	}); err != nil {
		return err
	}
	key.Name = appName
	if err := editAs(ctx, c, key, &appsv1.Deployment{}, func(dep *appsv1.Deployment) {
		if dep.Spec.Replicas != nil {
			d.scenario.oldReplicas = *dep.Spec.Replicas
		}
		dep.Spec.Replicas = new(hotfixReplicas)
	}); err != nil {
		return err
	}
	d.printHotfix()
	return nil
}

// oncall is a client acting as oncallUser, a break-glass user.
func (d *demo) oncall(ctx context.Context) (client.Client, error) {
	user, err := d.env.AddBreakGlassUser(ctx, oncallUser)
	if err != nil {
		return nil, err
	}
	c, err := client.New(user.Config, client.Options{Scheme: d.env.Scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting as %s: %w", oncallUser, err)
	}
	return c, nil
}

// editAs reads obj, changes it and writes it back with an Update under
// hotfixManager, as `kubectl edit` does. Flux may write the object in
// between, so a conflict is retried on a fresh read.
func editAs[T client.Object](ctx context.Context, c client.Client, key client.ObjectKey, obj T, change func(T)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(ctx, obj, client.FieldOwner(hotfixManager))
	})
	if err != nil {
		return fmt.Errorf("editing %T %s as %s: %w", obj, key, oncallUser, err)
	}
	return nil
}

func (d *demo) printHotfix() {
	p := &printer{w: d.opts.out}
	p.line("    %s, in group %s, edits two objects Flux manages (field manager %s):", oncallUser, oncallGroup, hotfixManager)
	p.line("      %-24s %-32s %s", "configmap/"+flagsName, fmt.Sprintf("adds %s: %q", hotfixFlag, hotfixValue), "(a new feature flag)")
	p.line("      %-24s %-32s %s", "deployment/"+appName, fmt.Sprintf("replicas %d -> %d", d.scenario.oldReplicas, hotfixReplicas),
		"(more capacity, now)")
}

// waitFor polls check until it returns nil, for at most timeout. check's
// last error says what was still missing, and becomes the cause of the
// failure, so the one-line report reads "what: missing thing".
func (d *demo) waitFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, scenarioPoll, timeout, true, func(ctx context.Context) (bool, error) {
		if err := d.refluxGone(); err != nil {
			return false, err
		}
		err := check(ctx)
		if ctx.Err() == nil && (err == nil || !strings.Contains(err.Error(), "would exceed context deadline")) {
			// A check cut short by the deadline (client-go's rate
			// limiter refuses a wait past it before the context ends)
			// says nothing about what was missing; the one before does.
			last = err
		}
		return err == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errRefluxExited) || ctx.Err() != nil:
		return err
	case last != nil:
		return fmt.Errorf("%s: after %s, %w", what, timeout, last)
	}
	return fmt.Errorf("%s: %w", what, err)
}
