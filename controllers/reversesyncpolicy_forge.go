package controllers

import (
	"context"
	"fmt"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/source"
)

// checkForge proves the pull-request token works and reaches every
// repository the policy's Kustomizations apply from (policy.ForgeChecks).
// A missing token or one the forge refuses is the user's to fix
// (policy.ErrInvalid); a forge that does not answer is retried.
func (r *ReverseSyncPolicyReconciler) checkForge(ctx context.Context, obj *refluxv1.ReverseSyncPolicy,
	governed []kustomizev1.Kustomization) (string, error) {
	pr := obj.Spec.Git.PullRequest
	if pr == nil || obj.Spec.Git.ReportOnly {
		return "", nil
	}
	token, err := r.forgeToken(ctx, obj)
	if err != nil {
		return refluxv1.TokenNotFoundReason, err
	}
	var urls []string
	for i := range governed {
		// A Kustomization reports its own missing source.
		if repo, err := source.GitRepository(ctx, r.Client, &governed[i]); err == nil && repo != nil {
			urls = append(urls, repo.Spec.URL)
		}
	}
	if err := r.ForgeChecks.Check(ctx, pr, token, urls); err != nil {
		return refluxv1.ForgeUnreachableReason, err
	}
	return "", nil
}

func (r *ReverseSyncPolicyReconciler) forgeToken(ctx context.Context, obj *refluxv1.ReverseSyncPolicy) (string, error) {
	name := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.Git.PullRequest.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := r.Get(ctx, name, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &policy.FieldError{Field: "spec.git.pullRequest.secretRef", Reason: fmt.Sprintf("Secret %s not found", name)}
		}
		return "", fmt.Errorf("getting pull-request Secret %s: %w", name, err)
	}
	token := strings.TrimSpace(string(secret.Data[refluxv1.PullRequestTokenKey]))
	if token == "" {
		return "", &policy.FieldError{Field: "spec.git.pullRequest.secretRef",
			Reason: fmt.Sprintf("Secret %s has no %q key", name, refluxv1.PullRequestTokenKey)}
	}
	return token, nil
}
