package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// applyFleet pushes the fleet to one repository, creates the target
// namespaces, one GitRepository and 20 opted-in Kustomizations with the
// policy governing them, and waits until Flux has applied every one.
func applyFleet(ctx context.Context) ([]*kustomizev1.Kustomization, error) {
	dir, err := os.MkdirTemp("", "reflux-bench-fleet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // scratch space
	if err := writeFleet(dir); err != nil {
		return nil, fmt.Errorf("writing the fleet: %w", err)
	}
	if _, err := env.Git.PushDir(ctx, fleetRepo, dir); err != nil {
		return nil, err
	}
	for _, ns := range namespaces() {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	src, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{
		Name: "fleet", Namespace: fleetNS, Repo: fleetRepo, Interval: time.Hour,
	})
	if err != nil {
		return nil, err
	}
	if err := env.WaitForReady(ctx, src); err != nil {
		return nil, err
	}
	kss := make([]*kustomizev1.Kustomization, 0, kustomizations)
	for k := range kustomizations {
		ks, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
			Name: ksName(k), Namespace: fleetNS, Source: src.Name, Path: "./" + ksName(k),
			TargetNamespace: targetNamespace(k), Prune: true,
			// No periodic reconcile, of Flux or of reflux's resync, lands
			// in the measured window.
			Interval: time.Hour,
			Customize: func(ks *kustomizev1.Kustomization) {
				ks.Labels = map[string]string{fleetLabel: "fleet"}
				ks.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
			},
		})
		if err != nil {
			return nil, err
		}
		kss = append(kss, ks)
	}
	for _, ks := range kss {
		if err := env.WaitForReady(ctx, ks); err != nil {
			return nil, err
		}
	}
	return kss, env.Client.Create(ctx, policy())
}

func namespaces() []string {
	out := []string{fleetNS}
	for k := range kustomizations {
		out = append(out, targetNamespace(k))
	}
	return out
}

// policy governs the fleet with the built-in classification, which holds
// every drifted field, and reports without pushing branches.
func policy() *refluxv1.ReverseSyncPolicy {
	p := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: fleetNS}}
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{fleetLabel: "fleet"}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.ReportOnly = true
	return p
}

// waitClean waits until reflux reports Drifted=False on every
// Kustomization: it has rendered each, synced its live watches and dry-run
// every object once.
func waitClean(ctx context.Context, kss []*kustomizev1.Kustomization) error {
	for _, ks := range kss {
		var status string
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
				return false, err
			}
			c := conditions.Get(ks, refluxv1.DriftedCondition)
			if c == nil {
				return false, nil
			}
			status = string(c.Status) + "/" + c.Reason + ": " + c.Message
			return c.Status == metav1.ConditionFalse && c.Reason == refluxv1.NoDriftReason, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for reflux to report %s clean (Drifted: %q): %w", ks.Name, status, err)
		}
	}
	return nil
}
