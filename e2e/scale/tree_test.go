package scale

import (
	"context"
	"fmt"
	"os"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	fluxNS   = "flux-system"
	treeRepo = "tree.git"
	// scaleLabel selects the case's Kustomizations for the policy.
	scaleLabel = "reflux.dev/scale"
	// interval is every Flux object's interval: long enough that no
	// periodic reconcile, of Flux or of reflux's resync, lands in a case.
	interval = 6 * time.Hour
)

// pushTree writes the case's tree, pushes it, creates the target
// namespaces and a GitRepository, and waits until source-controller has
// fetched it, so that what is timed next is kustomize-controller alone.
func pushTree(ctx context.Context, env *testenv.Env, c scaleCase) error {
	dir, err := os.MkdirTemp("", "reflux-scale-tree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // scratch space
	if err := writeTree(dir, c); err != nil {
		return fmt.Errorf("writing the tree: %w", err)
	}
	if _, err := env.Git.PushDir(ctx, treeRepo, dir); err != nil {
		return err
	}
	for _, ns := range append([]string{fluxNS}, namespaces(c)...) {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			return err
		}
	}
	src, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{
		Name: "tree", Namespace: fluxNS, Repo: treeRepo, Interval: interval,
	})
	if err != nil {
		return err
	}
	return env.WaitForReady(ctx, src)
}

func namespaces(c scaleCase) []string {
	out := make([]string, 0, c.kustomizations)
	for k := range c.kustomizations {
		out = append(out, targetNamespace(k))
	}
	return out
}

func ksNames(c scaleCase) []string {
	out := make([]string, 0, c.kustomizations)
	for k := range c.kustomizations {
		out = append(out, ksName(k))
	}
	return out
}

// createKustomizations creates the case's Kustomizations, opted in to
// reverse sync and labelled for the policy, with no wait.
func createKustomizations(ctx context.Context, env *testenv.Env, c scaleCase) error {
	for k := range c.kustomizations {
		_, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
			Name: ksName(k), Namespace: fluxNS, Source: "tree", Path: "./" + ksName(k),
			TargetNamespace: targetNamespace(k), Prune: true, Interval: interval,
			Customize: func(ks *kustomizev1.Kustomization) {
				ks.Labels = map[string]string{scaleLabel: "tree"}
				ks.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
				// Flux's default timeout is the interval; say so, as the
				// apply of 10,000 objects takes minutes.
				ks.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
			},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// policy governs the tree with the built-in classification, which holds
// every drifted field, and reports without pushing branches.
func policy() *refluxv1.ReverseSyncPolicy {
	p := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Name: "tree", Namespace: fluxNS}}
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{scaleLabel: "tree"}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.ReportOnly = true
	return p
}

// The person whose edits the benchmark makes: a user with a human's name
// who may edit ConfigMaps and nothing else, not the admin.
const (
	editorName  = "oncall@example.com"
	editorGroup = "reflux-scale:oncall"
)

// editorRBAC lets editorGroup read and edit ConfigMaps, as a team's
// on-call role would.
func editorRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "reflux-scale-oncall"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "update", "patch"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: editorGroup}},
	}
	return role, binding
}
