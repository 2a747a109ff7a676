package release

import (
	"errors"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
)

// ErrNoHistory means the HelmRelease has no release in status.history:
// helm-controller has not installed it yet (or cleared its history after
// an uninstall), so there is no desired state to compare with.
var ErrNoHistory = errors.New("HelmRelease has no release in its history")

// Ref names the Helm release helm-controller last installed or upgraded
// for a HelmRelease, and where Helm stores it.
type Ref struct {
	// Name and Namespace of the Helm release; Namespace is where its
	// namespaced objects go when the chart names none.
	Name, Namespace string
	// Version is the release's version (Helm's revision).
	Version int
	// StorageNamespace is the namespace of the release's Secret.
	StorageNamespace string
}

// String is helm-controller's name of the release in its messages,
// <namespace>/<name>.v<version> (v2.Snapshot.FullReleaseName).
func (r Ref) String() string {
	return fmt.Sprintf("%s/%s.v%d", r.Namespace, r.Name, r.Version)
}

// Latest returns the release helm-controller last made for hr: the
// latest snapshot of status.history, the one its drift detection diffs
// against. hr is not modified.
//
// The storage namespace is status.storageNamespace, which helm-controller
// sets to the namespace it stored the release in, or, before it has,
// spec.storageNamespace or hr's namespace (v2.HelmRelease.GetStorageNamespace):
// after spec.storageNamespace changes, the release stays where it was
// until helm-controller uninstalls and reinstalls it.
func Latest(hr *helmv2.HelmRelease) (Ref, error) {
	if hr == nil {
		return Ref{}, fmt.Errorf("%w: no HelmRelease", ErrNoHistory)
	}
	// Snapshots.Latest sorts in place; the caller's object is not ours to
	// reorder.
	latest := hr.Status.History.DeepCopy().Latest()
	if latest == nil {
		return Ref{}, fmt.Errorf("HelmRelease %s/%s: %w", hr.Namespace, hr.Name, ErrNoHistory)
	}
	if latest.Name == "" || latest.Namespace == "" || latest.Version < 1 {
		return Ref{}, fmt.Errorf("HelmRelease %s/%s: %w: latest snapshot names release %q in namespace %q, version %d",
			hr.Namespace, hr.Name, ErrNoHistory, latest.Name, latest.Namespace, latest.Version)
	}
	storage := hr.Status.StorageNamespace
	if storage == "" {
		storage = hr.GetStorageNamespace()
	}
	return Ref{Name: latest.Name, Namespace: latest.Namespace, Version: latest.Version, StorageNamespace: storage}, nil
}
