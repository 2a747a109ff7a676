package cli

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/release"
)

// liveSource is what the live chart trace reads of a cluster, so the
// trace can be tested without one.
type liveSource interface {
	// helmRelease is the HelmRelease ns/name.
	helmRelease(ctx context.Context, ns, name string) (*helmv2.HelmRelease, error)
	// release is the chart, values and release of the release
	// helm-controller last made for hr; its lines and post unset.
	release(ctx context.Context, hr *helmv2.HelmRelease) (chartInput, error)
	// gitLines finds where the tree of the Kustomization that applies hr
	// sets its values and post-renderers.
	gitLines(ctx context.Context, cmd ioCmd, hr *helmv2.HelmRelease) (valuesLines, error)
}

// liveChart reads the chart and values of the release helm-controller
// last made for the HelmRelease ns/name, in the cluster of
// opts.kubeconfig, and its lines in Git (liveChartFrom).
func liveChart(ctx context.Context, cmd ioCmd, opts *traceOptions, ns, name string) (chartInput, error) {
	c, err := clusterClient(opts.kubeconfig)
	if err != nil {
		return chartInput{}, err
	}
	src := clusterSource{c: c, opts: &diffOptions{path: opts.path, artifactHost: opts.artifactHost}}
	return liveChartFrom(ctx, cmd, src, ns, name)
}

// liveChartFrom renders the chart of the release helm-controller last
// made for the HelmRelease ns/name, with that release's values, through
// the HelmRelease's post-renderers, as the offline trace does: a field
// they set traces to the line of the patch in the Kustomization's tree.
// Where that tree cannot be read, the trace goes on without lines, with a
// warning, and such a field is refused as post-renderer, as helmlive
// refuses it.
func liveChartFrom(ctx context.Context, cmd ioCmd, src liveSource, ns, name string) (chartInput, error) {
	hr, err := src.helmRelease(ctx, ns, name)
	if err != nil {
		return chartInput{}, err
	}
	in, err := src.release(ctx, hr)
	if err != nil {
		return chartInput{}, err
	}
	lines, err := src.gitLines(ctx, cmd, hr)
	if err != nil {
		what := "values lines"
		if len(hr.Spec.PostRenderers) > 0 {
			what = "values and post-renderer lines"
		}
		warn(cmd, "%s will be missing: %v", what, err)
		lines = nil
	}
	return in.forHelmRelease(hr, lines)
}

// clusterSource reads a HelmRelease, its release and its Kustomization's
// tree from the cluster.
type clusterSource struct {
	c client.Client
	// opts say where the tree is: a local checkout, or the source's
	// artifact and the host to fetch it from.
	opts *diffOptions
}

var _ liveSource = clusterSource{}

func (s clusterSource) helmRelease(ctx context.Context, ns, name string) (*helmv2.HelmRelease, error) {
	hr := &helmv2.HelmRelease{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hr); err != nil {
		return nil, fmt.Errorf("getting HelmRelease %s/%s: %w", ns, name, err)
	}
	return hr, nil
}

func (s clusterSource) release(ctx context.Context, hr *helmv2.HelmRelease) (chartInput, error) {
	latest, err := release.Latest(hr)
	if err != nil {
		return chartInput{}, err
	}
	rls, err := release.Load(ctx, s.c, latest)
	if err != nil {
		return chartInput{}, fmt.Errorf("reading release %s: %w", latest, err)
	}
	return chartInput{chart: rls.Chart, values: rls.Config, release: chart.Release{Name: rls.Name, Namespace: rls.Namespace,
		Revision: rls.Version, IsUpgrade: rls.Version > 1, ClusterScoped: chart.ClusterScopedBy(s.c.RESTMapper())}}, nil
}

func (s clusterSource) gitLines(ctx context.Context, cmd ioCmd, hr *helmv2.HelmRelease) (valuesLines, error) {
	lines, err := helmReleaseInGit(ctx, cmd, s.c, hr, s.opts)
	if err != nil {
		return nil, err
	}
	return lines, nil
}
