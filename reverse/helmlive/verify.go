package helmlive

import (
	"context"
	"errors"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/release"
)

// Verifier renders a governed HelmRelease's chart with a values change
// before write-back proposes it (issue 19 §6). It renders the chart and
// the values of the release helm-controller last made, as its next
// upgrade would: the Kustomize re-render proves the HelmRelease's
// spec.values holds the new value; this proves the chart turns that value
// into the live edit and into nothing else.
type Verifier struct {
	// HelmReleases reads HelmReleases; Storage reads Helm's release
	// Secrets, uncached.
	HelmReleases client.Reader
	Storage      release.SecretGetter
	// ClusterScoped tells cluster-scoped kinds; nil knows Kubernetes' own.
	ClusterScoped func(schema.GroupKind) bool
}

// VerifyValues renders hr's latest release with set and says how the
// render falls short of want (chart.VerifyValues).
func (v Verifier) VerifyValues(ctx context.Context, hr types.NamespacedName, set []chart.Setting, want []chart.Wanted) error {
	if v.HelmReleases == nil || v.Storage == nil {
		return errors.New("helmlive: a Verifier needs HelmReleases and Storage")
	}
	obj := &helmv2.HelmRelease{}
	if err := v.HelmReleases.Get(ctx, hr, obj); err != nil {
		return fmt.Errorf("reading HelmRelease %s: %w", hr, err)
	}
	ref, err := release.Latest(obj)
	if err != nil {
		return fmt.Errorf("HelmRelease %s: %w", hr, err)
	}
	rls, err := release.Load(ctx, v.Storage, ref)
	if err != nil {
		return fmt.Errorf("HelmRelease %s: %w", hr, err)
	}
	// Rendered as the upgrade the change leads to: the next version.
	rel := chart.Release{Name: rls.Name, Namespace: rls.Namespace, Revision: rls.Version + 1, IsUpgrade: true,
		ClusterScoped: v.ClusterScoped}
	if err := chart.VerifyValues(rls.Chart, rls.Config, rel, set, want); err != nil {
		return fmt.Errorf("release %s: %w", ref, err)
	}
	return nil
}
