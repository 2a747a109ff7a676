package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// Targets resolves what write-back needs from the cluster: the
// GitRepository, its auth Secret, the policy's signing Secret and
// pull-request token, and the held live Secrets the records name.
type Targets struct {
	// Reader reads Secrets straight from the apiserver, as Flux's
	// controllers do, and the rest from the cache.
	Reader client.Reader
}

var _ governor.Targets = Targets{}

// Resolve implements governor.Targets.
func (t Targets) Resolve(ctx context.Context, g *governor.Governed, set *reverse.DriftSet) error {
	if g.Policy.Spec.Git.ReportOnly {
		return nil
	}
	repo, err := GitRepository(ctx, t.Reader, g.Kustomization)
	if err != nil || repo == nil {
		return err
	}
	src := &reverse.GitSource{URL: repo.Spec.URL}
	if repo.Spec.Reference != nil {
		src.Branch = repo.Spec.Reference.Branch
	}
	if repo.Spec.SecretRef != nil {
		data, err := t.secretData(ctx, repo.Namespace, repo.Spec.SecretRef.Name)
		if err != nil {
			return err
		}
		src.AuthData = data
	}
	set.Source = src
	if err := t.liveSecrets(ctx, set); err != nil {
		return err
	}
	return t.policySecrets(ctx, g.Policy, set)
}

// policySecrets reads the policy's signing key and pull-request token.
func (t Targets) policySecrets(ctx context.Context, p *refluxv1.ReverseSyncPolicy, set *reverse.DriftSet) error {
	if key := p.Spec.Git.SigningKey; key != nil {
		data, err := t.secretData(ctx, p.Namespace, key.SecretRef.Name)
		if err != nil {
			return err
		}
		set.SigningKey = data
	}
	if pr := p.Spec.Git.PullRequest; pr != nil {
		data, err := t.secretData(ctx, p.Namespace, pr.SecretRef.Name)
		if err != nil {
			return err
		}
		token := strings.TrimSpace(string(data[refluxv1.PullRequestTokenKey]))
		if token == "" {
			return fmt.Errorf("Secret %s/%s has no %q key for spec.git.pullRequest", p.Namespace, pr.SecretRef.Name,
				refluxv1.PullRequestTokenKey)
		}
		set.ForgeToken = token
	}
	return nil
}

func (t Targets) secretData(ctx context.Context, ns, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := t.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("getting Secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}

// liveSecrets reads the live Secrets the records name: records mask Secret
// values, and write-back encrypts the live ones with SOPS. Hotfixes never
// reach Git, so their Secrets are not read.
func (t Targets) liveSecrets(ctx context.Context, set *reverse.DriftSet) error {
	for _, d := range set.Records {
		o := d.Spec.Object
		if o.Kind != "Secret" || o.APIVersion != "v1" || d.Spec.ManualHotfix {
			continue
		}
		if !slices.ContainsFunc(d.Spec.Fields, func(f refluxv1.DriftField) bool { return !f.ContentUnknown() }) {
			// Recorded from the audit log (--secrets=metadata): reflux
			// reads no Secret it was not allowed to watch.
			continue
		}
		data, err := t.secretData(ctx, o.Namespace, o.Name)
		if err != nil {
			if apierrors.IsNotFound(errors.Unwrap(err)) {
				continue // gone: write-back refuses the fields with a reason
			}
			return err
		}
		if set.LiveSecrets == nil {
			set.LiveSecrets = map[string]map[string][]byte{}
		}
		set.LiveSecrets[o.Namespace+"/"+o.Name] = data
	}
	return nil
}
