package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// targets resolves what write-back needs from the cluster: the
// GitRepository, its auth Secret, the policy's signing Secret and the held
// live Secrets the records name. Reading here keeps reverse/ free of
// cluster access to sources and Secrets.
type targets struct {
	// reader reads Secrets straight from the apiserver, as Flux's
	// controllers do, and the rest from the cache.
	reader client.Reader
}

var _ governor.Targets = targets{}

// Resolve implements governor.Targets.
func (t targets) Resolve(ctx context.Context, g *governor.Governed, set *reverse.DriftSet) error {
	ks := g.Kustomization
	if g.Policy.Spec.Git.ReportOnly || ks.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind {
		return nil
	}
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	repo := &sourcev1.GitRepository{}
	if err := t.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ks.Spec.SourceRef.Name}, repo); err != nil {
		return fmt.Errorf("getting GitRepository %s/%s: %w", ns, ks.Spec.SourceRef.Name, err)
	}
	src := &reverse.GitSource{URL: repo.Spec.URL}
	if repo.Spec.Reference != nil {
		src.Branch = repo.Spec.Reference.Branch
	}
	if repo.Spec.SecretRef != nil {
		data, err := t.secretData(ctx, ns, repo.Spec.SecretRef.Name)
		if err != nil {
			return err
		}
		src.AuthData = data
	}
	set.Source = src
	if err := t.liveSecrets(ctx, set); err != nil {
		return err
	}
	if key := g.Policy.Spec.Git.SigningKey; key != nil {
		data, err := t.secretData(ctx, g.Policy.Namespace, key.SecretRef.Name)
		if err != nil {
			return err
		}
		set.SigningKey = data
	}
	if pr := g.Policy.Spec.Git.PullRequest; pr != nil {
		data, err := t.secretData(ctx, g.Policy.Namespace, pr.SecretRef.Name)
		if err != nil {
			return err
		}
		token := strings.TrimSpace(string(data[refluxv1.PullRequestTokenKey]))
		if token == "" {
			return fmt.Errorf("Secret %s/%s has no %q key for spec.git.pullRequest", g.Policy.Namespace, pr.SecretRef.Name,
				refluxv1.PullRequestTokenKey)
		}
		set.ForgeToken = token
	}
	return nil
}

func (t targets) secretData(ctx context.Context, ns, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := t.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("getting Secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}

// liveSecrets reads the live Secrets the records name: records mask Secret
// values, and write-back encrypts the live ones with SOPS. Hotfixes never
// reach Git, so their Secrets are not read.
func (t targets) liveSecrets(ctx context.Context, set *reverse.DriftSet) error {
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
