package sidebyside

import (
	"context"
	"fmt"
	"os"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	fluxNS   = "flux-system"
	treeRepo = "tree.git"
	// sideLabel selects the case's Kustomizations for the policy.
	sideLabel = "reflux.dev/sidebyside"
)

// applyTree pushes the case's tree, creates its GitRepository and
// Kustomizations, and waits until kustomize-controller has applied them
// all.
func applyTree(ctx context.Context, env *testenv.Env, c sizeCase) error {
	dir, err := os.MkdirTemp("", "reflux-sidebyside-tree-")
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
		Name: "tree", Namespace: fluxNS, Repo: treeRepo, Interval: 6 * time.Hour,
	})
	if err != nil {
		return err
	}
	if err := env.WaitForReady(ctx, src); err != nil {
		return err
	}
	var all []*kustomizev1.Kustomization
	for k := range c.kustomizations {
		ks, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
			Name: ksName(k), Namespace: fluxNS, Source: "tree", Path: "./" + ksName(k),
			TargetNamespace: targetNamespace(k), Prune: true, Interval: c.fluxInterval,
			Customize: func(ks *kustomizev1.Kustomization) {
				ks.Labels = map[string]string{sideLabel: "tree"}
				ks.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
				ks.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
			},
		})
		if err != nil {
			return err
		}
		all = append(all, ks)
	}
	for _, ks := range all {
		if err := env.WaitForReady(ctx, ks); err != nil {
			return err
		}
	}
	return nil
}

func namespaces(c sizeCase) []string {
	out := make([]string, 0, c.kustomizations)
	for k := range c.kustomizations {
		out = append(out, targetNamespace(k))
	}
	return out
}

// policy governs the tree with the built-in classification, which holds
// every drifted field and writes it to a needs-decision branch.
func policy() *refluxv1.ReverseSyncPolicy {
	p := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Name: "tree", Namespace: fluxNS}}
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{sideLabel: "tree"}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	return p
}

// waitNoDrift polls until every Kustomization of the case reports
// Drifted=False NoDrift, and returns when that was first seen.
func waitNoDrift(ctx context.Context, env *testenv.Env, c sizeCase, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var list kustomizev1.KustomizationList
		if err := env.Client.List(ctx, &list, client.InNamespace(fluxNS), client.MatchingLabels{sideLabel: "tree"}); err != nil {
			return false, err
		}
		clean := 0
		for _, ks := range list.Items {
			d := apimeta.FindStatusCondition(ks.Status.Conditions, refluxv1.DriftedCondition)
			r := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			if d != nil && d.Status == metav1.ConditionFalse && d.Reason == refluxv1.NoDriftReason &&
				r != nil && r.Status == metav1.ConditionTrue {
				clean++
			}
		}
		return clean == c.kustomizations, nil
	})
}
