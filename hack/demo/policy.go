package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/policy"
)

// createPolicy generates the signing key, stores it the way Flux's
// image-automation-controller expects, registers its public half with
// Gitea, stores Gitea's API token, and creates the policy that governs
// the app's Kustomization.
func (d *demo) createPolicy(ctx context.Context) error {
	key, err := testenv.NewSigningKey(authorName, "make demo", authorEmail)
	if err != nil {
		return err
	}
	if err := d.gitea.AddGPGKey(ctx, key.Public); err != nil {
		return err
	}
	d.keys.signingPub = filepath.Join(d.env.Dir, "signing-key.pub.asc")
	if err := os.WriteFile(d.keys.signingPub, key.Public, 0o600); err != nil {
		return fmt.Errorf("writing the public signing key: %w", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: signingSecret, Namespace: fluxNamespace},
		Data:       map[string][]byte{policy.OpenPGPKeyField: key.Private},
	}
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: tokenSecret, Namespace: fluxNamespace},
		Data:       map[string][]byte{refluxv1.PullRequestTokenKey: []byte(d.gitea.Token)},
	}
	for _, s := range []*corev1.Secret{secret, token} {
		if err := d.env.Client.Create(ctx, s); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	p := demoPolicy(d.gitea.URL)
	if err := d.env.Client.Create(ctx, p); err != nil {
		return fmt.Errorf("creating ReverseSyncPolicy %s/%s: %w", p.Namespace, p.Name, err)
	}
	d.policy = p
	return nil
}

// demoPolicy is config/samples' policy, with the feature-flag rule pointed
// at the sample app's flags file, opening its pull requests on the Gitea
// at giteaURL.
func demoPolicy(giteaURL string) *refluxv1.ReverseSyncPolicy {
	return &refluxv1.ReverseSyncPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName, Namespace: fluxNamespace},
		Spec: refluxv1.ReverseSyncPolicySpec{
			KustomizationSelector: metav1.LabelSelector{MatchLabels: map[string]string{tierLabel: tierValue}},
			Git: refluxv1.GitSpec{
				Author: refluxv1.CommitAuthor{Name: authorName, Email: authorEmail},
				SigningKey: &refluxv1.SigningKey{
					Type:      refluxv1.OpenPGPSigningKey,
					SecretRef: meta.LocalObjectReference{Name: signingSecret},
				},
				BranchPrefix: refluxv1.DefaultBranchPrefix,
				PullRequest: &refluxv1.PullRequestSpec{
					Provider:  refluxv1.GiteaProvider,
					APIURL:    giteaURL,
					SecretRef: meta.LocalObjectReference{Name: tokenSecret},
				},
			},
			Rules: []refluxv1.Rule{{
				Name:  "feature-flags",
				Paths: []string{"base/flags.yaml"}, Kinds: []string{"ConfigMap"}, Fields: []string{"/data/*"},
				Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow,
			}, {
				Name:   "image-rollback",
				Fields: []string{"/spec/template/spec/containers/*/image"},
				Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh,
			}, {
				Name:   "no-hold-for-annotations",
				Fields: []string{"/metadata/annotations/*"},
				Action: refluxv1.IgnoreAction, Hold: ptr.To(false),
			}},
		},
	}
}

// errPolicyStalled means reflux judged the policy unusable as written;
// waiting longer cannot help.
var errPolicyStalled = errors.New("policy is stalled")

// waitForPolicy waits until reflux has reconciled the current generation
// of the policy and reports it Ready.
func (d *demo) waitForPolicy(ctx context.Context) error {
	var ready *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, readinessTimeout, true,
		func(ctx context.Context) (bool, error) {
			if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(d.policy), d.policy); err != nil {
				return false, fmt.Errorf("getting policy: %w", err)
			}
			conds := d.policy.Status.Conditions
			if s := apimeta.FindStatusCondition(conds, meta.StalledCondition); s != nil && s.Status == metav1.ConditionTrue {
				return false, fmt.Errorf("%w: %s: %s", errPolicyStalled, s.Reason, s.Message)
			}
			ready = apimeta.FindStatusCondition(conds, meta.ReadyCondition)
			return ready != nil && ready.Status == metav1.ConditionTrue &&
				d.policy.Status.ObservedGeneration == d.policy.Generation, nil
		})
	if err != nil {
		return fmt.Errorf("policy %s/%s not Ready (%s): %w", d.policy.Namespace, d.policy.Name, describe(ready), err)
	}
	return nil
}

// describe renders a condition for an error message.
func describe(c *metav1.Condition) string {
	if c == nil {
		return "no Ready condition yet"
	}
	return fmt.Sprintf("Ready=%s, %s: %s", c.Status, c.Reason, c.Message)
}

// readyCondition returns the policy's Ready condition, or nil.
func readyCondition(p *refluxv1.ReverseSyncPolicy) *metav1.Condition {
	return apimeta.FindStatusCondition(p.Status.Conditions, meta.ReadyCondition)
}
