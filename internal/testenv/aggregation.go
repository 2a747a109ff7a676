package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeControllerManagerUser is the user kube-controller-manager
// authenticates as, named as on a real control plane.
const KubeControllerManagerUser = "system:kube-controller-manager"

// startAggregation starts kube-controller-manager with its
// clusterrole-aggregation controller alone, once per environment. reflux's
// workload access is an aggregated ClusterRole (config/rbac's
// reflux-workloads), whose rules that controller fills in: the apiserver
// alone never does, so without it an install would grant nothing. It
// starts with the first install rather than with the environment, so
// environments that install nothing do not run it.
func (e *Env) startAggregation() error {
	e.kcmMu.Lock()
	defer e.kcmMu.Unlock()
	if e.kcm != nil {
		return nil
	}
	bin, err := binaryPath(e.opts.KubeBinDir, binKubeControllerManager)
	if err != nil {
		return err
	}
	home := filepath.Join(e.Dir, binKubeControllerManager)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("creating home of %s: %w", binKubeControllerManager, err)
	}
	kubeconfig := filepath.Join(home, "kubeconfig")
	if _, err := e.cp.kubeconfig(kubeconfig, KubeControllerManagerUser, "system:masters"); err != nil {
		return err
	}
	env, err := childEnv(home, kubeconfig)
	if err != nil {
		return err
	}
	controllers := "clusterrole-aggregation-controller"
	if e.opts.Workloads {
		controllers += ",deployment-controller,replicaset-controller,namespace-controller"
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false",
		// Nothing here reads its metrics or health: WaitAggregated
		// watches its work instead.
		"--secure-port=0",
	}
	p, err := startProcess(binKubeControllerManager, bin, args, env, e.Dir)
	if err != nil {
		return err
	}
	e.kcm = p
	return nil
}

// StartControllerManager starts kube-controller-manager as the first
// install does, for a test that installs reflux otherwise (through Flux):
// its controllers are what aggregates reflux's ClusterRoles and, with
// Options.Workloads, what brings its Deployment to Available.
func (e *Env) StartControllerManager() error {
	return e.startAggregation()
}

// controllerManager returns kube-controller-manager once started, else nil.
func (e *Env) controllerManager() *Process {
	e.kcmMu.Lock()
	defer e.kcmMu.Unlock()
	return e.kcm
}

// WaitAggregated waits until every aggregated ClusterRole among objs holds
// every rule of the ClusterRoles its selectors match, as the
// clusterrole-aggregation controller makes it.
func (e *Env) WaitAggregated(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		if u.GetKind() != "ClusterRole" || u.Object["aggregationRule"] == nil {
			continue
		}
		var missing string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, e.opts.WaitTimeout, true,
			func(ctx context.Context) (bool, error) {
				if p := e.controllerManager(); p != nil && p.exited() {
					return false, fmt.Errorf("%s exited: %v (log: %s)", p.Name, p.waitErr, p.LogPath)
				}
				var err error
				missing, err = e.unaggregated(ctx, u.GetName())
				return missing == "" && err == nil, err
			})
		if err != nil {
			return fmt.Errorf("waiting for ClusterRole %s to aggregate %s: %w", u.GetName(), missing, err)
		}
	}
	return nil
}

// unaggregated names a rule the aggregated ClusterRole name lacks, or ""
// when it has them all.
func (e *Env) unaggregated(ctx context.Context, name string) (string, error) {
	agg := &rbacv1.ClusterRole{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, agg); err != nil {
		return "", fmt.Errorf("reading ClusterRole %s: %w", name, err)
	}
	if agg.AggregationRule == nil {
		return "", nil
	}
	for _, sel := range agg.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return "", fmt.Errorf("ClusterRole %s: %w", name, err)
		}
		roles := &rbacv1.ClusterRoleList{}
		if err := e.Client.List(ctx, roles, client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return "", fmt.Errorf("listing ClusterRoles for %s: %w", name, err)
		}
		for _, r := range roles.Items {
			if r.Name == name {
				continue
			}
			for _, rule := range r.Rules {
				if !hasRule(agg.Rules, rule) {
					return fmt.Sprintf("%s's rule %s", r.Name, rule.String()), nil
				}
			}
		}
	}
	return "", nil
}

func hasRule(rules []rbacv1.PolicyRule, want rbacv1.PolicyRule) bool {
	for _, r := range rules {
		if equality.Semantic.DeepEqual(r, want) {
			return true
		}
	}
	return false
}
