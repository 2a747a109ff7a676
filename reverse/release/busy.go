package release

import (
	"context"
	"errors"
	"fmt"

	helmcommon "helm.sh/helm/v4/pkg/release/common"
)

// Helm deletes a release's objects itself in three cases: an upgrade or a
// rollback drops what the new manifest no longer renders (or replaces an
// object, with upgrade.force), and an uninstall (a remediation, or the
// HelmRelease's deletion) removes them all. Each writes Helm's storage
// first: the next version as pending-upgrade or pending-rollback before
// the upgrade or rollback touches an object, and the current version as
// uninstalling before the uninstall does (helm.sh/helm/v4/pkg/action).
// So once an object of ref's release is seen deleted, Helm's storage
// tells whether Helm may have deleted it.

// ErrBusy means Helm is, or may be, changing the release's objects
// itself: a deletion seen now may be Helm's, and is to be looked at again
// once the HelmRelease names the release Helm settled on.
var ErrBusy = errors.New("Helm is changing the release")

// ErrGone means ref's release is no longer Helm's deployed release: Helm
// superseded, failed or uninstalled it, so its objects are not what Helm
// keeps, and one deleted is not drift from it.
var ErrGone = errors.New("the release is no longer deployed")

// Settled returns nil when ref's release is the one Helm has deployed
// and Helm is making no other: a deletion of one of its objects is then
// someone else's. Otherwise it returns ErrBusy or ErrGone, wrapped with
// what Helm's storage says, or the storage's own error.
func Settled(ctx context.Context, secrets SecretGetter, ref Ref) error {
	rls, err := Load(ctx, secrets, ref)
	switch {
	case errors.Is(err, ErrReleaseNotFound):
		return fmt.Errorf("%w: %s is not in Helm's storage (uninstalled)", ErrGone, ref)
	case err != nil:
		return err
	}
	var status helmcommon.Status
	if rls.Info != nil {
		status = rls.Info.Status
	}
	switch {
	case status.IsPending() || status == helmcommon.StatusUninstalling:
		return fmt.Errorf("%w: %s is %s", ErrBusy, ref, status)
	case status != helmcommon.StatusDeployed:
		return fmt.Errorf("%w: %s is %s", ErrGone, ref, status)
	}
	next := ref
	next.Version++
	switch _, err := Load(ctx, secrets, next); {
	case errors.Is(err, ErrReleaseNotFound):
		return nil
	case err != nil && !errors.Is(err, ErrReleaseUndecodable):
		return err
	}
	// Helm writes the next version before it changes an object: an
	// upgrade or a rollback is under way, or done and not yet in the
	// HelmRelease's status.
	return fmt.Errorf("%w: %s is in Helm's storage", ErrBusy, next)
}
