package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

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
// "profiles/read-only", as InstallReflux installs config/default. The
// profiles keep config/default's names, so installing one over another
// replaces its RBAC.
func (e *Env) InstallProfile(ctx context.Context, path string) error {
	objs, err := renderInstall(ctx, e.opts.RepoRoot, path)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := e.Client.Patch(ctx, u, client.Apply, client.FieldOwner(installManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s from config/%s: %w", u.GetKind(), u.GetName(), path, err)
		}
	}
	return nil
}

// UninstallProfile deletes the RBAC objects of config/<path> (its Roles,
// ClusterRoles and their bindings), so that a test can install another
// profile after it without keeping this one's grants. The namespace, the
// CRDs and the ServiceAccount stay.
func (e *Env) UninstallProfile(ctx context.Context, path string) error {
	objs, err := renderInstall(ctx, e.opts.RepoRoot, path)
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

// renderInstall builds config/default with the same Flux-faithful build
// reflux uses, ordered so that namespaces and CRDs exist before what
// lives in them.
func renderInstall(ctx context.Context, root, path string) ([]*unstructured.Unstructured, error) {
	res, err := kustomize.Build(ctx, kustomize.BuildOptions{Root: filepath.Join(root, "config"), Path: path})
	if err != nil {
		return nil, fmt.Errorf("rendering config/%s: %w", path, err)
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
