package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/kustomize"
)

// Where config/default installs reflux: its namespace and the
// ServiceAccount its Deployment runs as.
const (
	RefluxNamespace      = "reflux-system"
	RefluxServiceAccount = "reflux-controller"
)

// installManager is the field manager of the objects InstallReflux
// applies, as `kubectl apply --server-side` would name its own.
const installManager = "testenv-install"

// InstallReflux renders config/default as `kubectl apply -k config/default`
// would and applies every object with server-side apply as the admin:
// the namespace, reflux's CRDs, its ServiceAccount, ClusterRole, leader
// election Role and their bindings. The Deployment and Service are applied
// too, but the test apiserver runs no controllers, so no pod ever starts:
// tests run the binary themselves, as ServiceAccountUser's identity.
// Applying twice changes nothing, so every caller may install.
func (e *Env) InstallReflux(ctx context.Context) error {
	return e.InstallProfile(ctx, "default")
}

// InstallProfile installs config/<path>, a kustomization such as
// "profiles/read-only", as InstallReflux installs config/default, with
// the kustomize Components given (relative to config/, such as
// "components/secrets") included as a Flux Kustomization's
// spec.components includes them. The profiles keep config/default's
// names, so installing one over another replaces its RBAC. It returns once
// the aggregated ClusterRoles it applied hold their rules (WaitAggregated):
// until then the ServiceAccount may do less than the profile grants.
func (e *Env) InstallProfile(ctx context.Context, path string, components ...string) error {
	objs, err := e.RenderProfile(ctx, path, components...)
	if err != nil {
		return err
	}
	if err := e.startAggregation(); err != nil {
		return err
	}
	for _, u := range objs {
		if err := e.Client.Patch(ctx, u, client.Apply, client.FieldOwner(installManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s from config/%s: %w", u.GetKind(), u.GetName(), path, err)
		}
	}
	return e.WaitAggregated(ctx, objs)
}

// UninstallProfile deletes the RBAC objects of config/<path> with
// components (its Roles, ClusterRoles and their bindings), so that a test
// can install another profile after it without keeping this one's grants.
// The namespace, the CRDs and the ServiceAccount stay.
func (e *Env) UninstallProfile(ctx context.Context, path string, components ...string) error {
	objs, err := e.RenderProfile(ctx, path, components...)
	if err != nil {
		return err
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := e.Client.Delete(ctx, u); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting %s %s of config/%s: %w", u.GetKind(), u.GetName(), path, err)
			}
		}
	}
	return nil
}

// RenderProfile builds config/<path> with components as InstallProfile
// applies it, with the same Flux-faithful build reflux uses, ordered so
// that namespaces and CRDs exist before what lives in them.
func (e *Env) RenderProfile(ctx context.Context, path string, components ...string) ([]*unstructured.Unstructured, error) {
	opts := kustomize.BuildOptions{Root: filepath.Join(e.opts.RepoRoot, "config"), Path: path}
	if len(components) > 0 {
		// Flux resolves spec.components against spec.path.
		ks := &kustomizev1.Kustomization{}
		for _, c := range components {
			rel, err := filepath.Rel(path, c)
			if err != nil {
				return nil, fmt.Errorf("component %s of config/%s: %w", c, path, err)
			}
			ks.Spec.Components = append(ks.Spec.Components, filepath.ToSlash(rel))
		}
		opts.Kustomization = ks
	}
	res, err := kustomize.Build(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("rendering config/%s with %v: %w", path, components, err)
	}
	objs := res.Objects
	sort.SliceStable(objs, func(i, j int) bool { return installRank(objs[i]) < installRank(objs[j]) })
	return objs, nil
}

// installRank orders kinds as kubectl and Flux apply them: cluster
// definitions first.
func installRank(u *unstructured.Unstructured) int {
	switch u.GetKind() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	case "ServiceAccount", "ClusterRole", "Role":
		return 2
	default:
		return 3
	}
}
