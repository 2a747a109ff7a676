package controllers

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// forgeCheckTimeout bounds the policy's forge check: a forge that does
// not answer must not hold the policy's reconcile.
const forgeCheckTimeout = 15 * time.Second

// checkForge proves the pull-request token works and reaches every
// repository the policy's Kustomizations apply from. A missing token or
// one the forge refuses is the user's to fix (policy.ErrInvalid); a forge
// that does not answer is retried.
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
	ctx, cancel := context.WithTimeout(ctx, forgeCheckTimeout)
	defer cancel()
	seen := map[string]bool{}
	for i := range governed {
		url, err := r.sourceURL(ctx, &governed[i])
		if err != nil || url == "" || seen[url] {
			continue // the Kustomization reports its own missing source
		}
		seen[url] = true
		opts := forge.Options{Provider: string(pr.Provider), Token: token, APIURL: pr.APIURL, RepoURL: url}
		if r.forgeChecks.fresh(opts) {
			continue
		}
		c, err := forge.New(ctx, opts)
		if err == nil {
			err = c.Check(ctx)
		}
		if err == nil {
			r.forgeChecks.passed(opts)
		}
		if err != nil {
			err = fmt.Errorf("%s repository %s: %w", pr.Provider, url, err)
			if forge.Unauthorized(err) || forge.StatusCode(err) == 404 {
				return refluxv1.ForgeUnreachableReason, &policy.FieldError{Field: "spec.git.pullRequest", Reason: err.Error()}
			}
			return refluxv1.ForgeUnreachableReason, err
		}
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

func (r *ReverseSyncPolicyReconciler) sourceURL(ctx context.Context, ks *kustomizev1.Kustomization) (string, error) {
	if ks.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind {
		return "", nil
	}
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	repo := &sourcev1.GitRepository{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: ks.Spec.SourceRef.Name}, repo); err != nil {
		return "", err
	}
	return repo.Spec.URL, nil
}

// forgeCheckTTL is how long a passed forge check stands. The policy is
// reconciled on every change of its Drift records, and a forge's API is
// rate-limited (GitHub: 5,000 requests an hour per token): each
// reconcile asking would spend the budget write-back needs. A token or
// repository that changes is checked at once, a failure on every
// reconcile.
const forgeCheckTTL = 10 * time.Minute

// forgeChecks remembers which forge checks passed, and when. A nil
// *forgeChecks remembers nothing. It is safe for concurrent use.
type forgeChecks struct {
	mu     sync.Mutex
	now    func() time.Time
	passes map[[sha256.Size]byte]time.Time
}

func newForgeChecks(now func() time.Time) *forgeChecks {
	return &forgeChecks{now: now, passes: map[[sha256.Size]byte]time.Time{}}
}

// key identifies a check by everything that decides its outcome, the
// token hashed so that it is not kept in memory twice.
func (*forgeChecks) key(o forge.Options) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join([]string{o.Provider, o.APIURL, o.RepoURL, o.Token}, "\x00")))
}

// fresh reports whether the same check passed within forgeCheckTTL.
func (f *forgeChecks) fresh(o forge.Options) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.passes[f.key(o)]
	return ok && f.now().Sub(at) < forgeCheckTTL
}

// passed records a check that passed.
func (f *forgeChecks) passed(o forge.Options) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for k, at := range f.passes {
		if now.Sub(at) >= forgeCheckTTL {
			delete(f.passes, k) // bounded by the checks of the last TTL
		}
	}
	f.passes[f.key(o)] = now
}
