package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Transport selects how source-controller reaches the git server.
type Transport string

// The transports the git server speaks.
const (
	TransportHTTP Transport = "http"
	TransportSSH  Transport = "ssh"
)

// GitRepositoryOptions describes a GitRepository on the environment's git
// server.
type GitRepositoryOptions struct {
	// Name and Namespace of the GitRepository. The auth Secret is named
	// Name + "-auth" in the same namespace.
	Name, Namespace string
	// Repo is the repository path on the server; defaults to "repo.git".
	Repo string
	// Branch defaults to DefaultBranch; Tag, when set, is followed instead.
	Branch, Tag string
	// Transport defaults to TransportHTTP.
	Transport Transport
	// Interval defaults to 10s, short enough that a push is seen without
	// forcing a reconcile.
	Interval time.Duration
	// URL, when set, replaces the server's URL for Repo: a StallProxy's,
	// say. The credentials stay the server's.
	URL string
}

// CreateGitRepository creates the auth Secret in Flux's format (username
// and password for HTTP; identity, identity.pub and known_hosts for SSH)
// and a GitRepository that uses it. It does not wait for readiness.
func (e *Env) CreateGitRepository(ctx context.Context, opts GitRepositoryOptions) (*sourcev1.GitRepository, error) {
	if opts.Repo == "" {
		opts.Repo = "repo.git"
	}
	if opts.Branch == "" {
		opts.Branch = DefaultBranch
	}
	if opts.Interval == 0 {
		opts.Interval = 10 * time.Second
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: opts.Name + "-auth", Namespace: opts.Namespace}}
	url := e.Git.HTTPURL(opts.Repo)
	switch opts.Transport {
	case TransportHTTP, "":
		secret.StringData = map[string]string{"username": e.Git.Username, "password": e.Git.Password}
	case TransportSSH:
		url = e.Git.SSHURL(opts.Repo)
		secret.Data = map[string][]byte{
			"identity":     e.Git.Identity,
			"identity.pub": e.Git.IdentityPub,
			"known_hosts":  e.Git.KnownHosts,
		}
	default:
		return nil, fmt.Errorf("unknown git transport %q", opts.Transport)
	}
	if opts.URL != "" {
		url = opts.URL
	}
	if err := e.Client.Create(ctx, secret); err != nil {
		return nil, fmt.Errorf("creating secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace},
		Spec: sourcev1.GitRepositorySpec{
			URL:       url,
			SecretRef: &meta.LocalObjectReference{Name: secret.Name},
			Interval:  metav1.Duration{Duration: opts.Interval},
			Reference: gitReference(opts.Branch, opts.Tag),
		},
	}
	if err := e.Client.Create(ctx, repo); err != nil {
		return nil, fmt.Errorf("creating GitRepository %s/%s: %w", repo.Namespace, repo.Name, err)
	}
	return repo, nil
}

// gitReference follows tag when it is set, else branch.
func gitReference(branch, tag string) *sourcev1.GitRepositoryRef {
	if tag != "" {
		return &sourcev1.GitRepositoryRef{Tag: tag}
	}
	return &sourcev1.GitRepositoryRef{Branch: branch}
}

// KustomizationOptions describes a Kustomization of a GitRepository in the
// same namespace.
type KustomizationOptions struct {
	// Name and Namespace of the Kustomization.
	Name, Namespace string
	// Source is the name of the GitRepository.
	Source string
	// Path is the directory in the repository, e.g. "./overlays/prod".
	Path string
	// TargetNamespace, when set, overrides the objects' namespace.
	TargetNamespace string
	// Prune deletes objects removed from the source.
	Prune bool
	// Interval defaults to 30s; tests force reconciles with Reconcile
	// rather than waiting for it.
	Interval time.Duration
	// Customize, when set, edits the object before it is created.
	Customize func(*kustomizev1.Kustomization)
}

// CreateKustomization creates a Kustomization with a short retry interval,
// so one created before its source is ready converges quickly. It does not
// wait for readiness.
func (e *Env) CreateKustomization(ctx context.Context, opts KustomizationOptions) (*kustomizev1.Kustomization, error) {
	if opts.Interval == 0 {
		opts.Interval = 30 * time.Second
	}
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace},
		Spec: kustomizev1.KustomizationSpec{
			Interval:        metav1.Duration{Duration: opts.Interval},
			RetryInterval:   &metav1.Duration{Duration: 2 * time.Second},
			Path:            opts.Path,
			Prune:           opts.Prune,
			TargetNamespace: opts.TargetNamespace,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{
				Kind: sourcev1.GitRepositoryKind,
				Name: opts.Source,
			},
		},
	}
	if opts.Customize != nil {
		opts.Customize(ks)
	}
	if err := e.Client.Create(ctx, ks); err != nil {
		return nil, fmt.Errorf("creating Kustomization %s/%s: %w", ks.Namespace, ks.Name, err)
	}
	return ks, nil
}

// HelmReleaseOptions describes a HelmRelease of a chart kept in a
// GitRepository in the same namespace. It needs an environment started
// with Options.Helm.
type HelmReleaseOptions struct {
	// Name and Namespace of the HelmRelease; the release is installed in
	// Namespace.
	Name, Namespace string
	// Source is the name of the GitRepository.
	Source string
	// Chart is the chart's directory in the repository, e.g.
	// "./charts/app".
	Chart string
	// Values, when set, override the chart's values.yaml.
	Values map[string]any
	// Interval defaults to 30s, for the HelmRelease and the HelmChart
	// helm-controller makes of it; tests force reconciles with Reconcile
	// rather than waiting for it.
	Interval time.Duration
	// Customize, when set, edits the object before it is created.
	Customize func(*helmv2.HelmRelease)
}

// CreateHelmRelease creates a HelmRelease whose chart source-controller
// builds from a GitRepository. It does not wait for readiness.
func (e *Env) CreateHelmRelease(ctx context.Context, opts HelmReleaseOptions) (*helmv2.HelmRelease, error) {
	if opts.Interval == 0 {
		opts.Interval = 30 * time.Second
	}
	interval := metav1.Duration{Duration: opts.Interval}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace},
		Spec: helmv2.HelmReleaseSpec{
			Interval: interval,
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:     opts.Chart,
				Interval:  &interval,
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: opts.Source},
			}},
		},
	}
	if opts.Values != nil {
		raw, err := json.Marshal(opts.Values)
		if err != nil {
			return nil, fmt.Errorf("encoding values of HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err)
		}
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
	if opts.Customize != nil {
		opts.Customize(hr)
	}
	if err := e.Client.Create(ctx, hr); err != nil {
		return nil, fmt.Errorf("creating HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err)
	}
	return hr, nil
}

// CreateNamespace creates a namespace. There is no namespace controller in
// the environment, so deleted namespaces stay Terminating; use fresh names.
func (e *Env) CreateNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
