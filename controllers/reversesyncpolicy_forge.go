package controllers

import (
	"context"
	"fmt"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/source"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// checkForge proves the pull-request token works and reaches every
// repository the policy's Kustomizations apply from (policy.ForgeChecks).
// A missing token or one the forge refuses is the user's to fix
// (policy.ErrInvalid); a forge that does not answer is retried. A token
// the forge says may only read is named so (TokenReadOnly), not taken for
// an unreachable forge: it reads, so everything else about it is right.
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
		if forge.ReadOnly(err) {
			return refluxv1.TokenReadOnlyReason, err
		}
		return refluxv1.ForgeUnreachableReason, err
	}
	return "", nil
}

func (r *ReverseSyncPolicyReconciler) forgeToken(ctx context.Context, obj *refluxv1.ReverseSyncPolicy) (string, error) {
	ref := obj.Spec.Git.PullRequest.SecretRef
	secret, err := r.policySecret(ctx, obj, "spec.git.pullRequest.secretRef", "pull-request", ref.Name)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(secret.Data[refluxv1.PullRequestTokenKey]))
	if token == "" {
		return "", &policy.FieldError{Field: "spec.git.pullRequest.secretRef",
			Reason: fmt.Sprintf("Secret %s/%s has no %q key", obj.Namespace, ref.Name, refluxv1.PullRequestTokenKey)}
	}
	return token, nil
}
