package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// ChartRepository is a Helm chart repository on loopback: an index.yaml
// and packaged charts over plain HTTP, as `helm repo index` and a static
// file server make one. source-controller's HelmRepository reads it like
// any other, so a HelmRelease's chart can come from a repository as well
// as from Git (issue 19).
type ChartRepository struct {
	// URL is the repository's address, a HelmRepository's spec.url.
	URL string
	dir string
	srv *http.Server
}

// StartChartRepository packages each chart directory (Chart.yaml and
// templates, as in Git) with Helm's own packager, indexes them, and
// serves them until Close.
func StartChartRepository(charts ...string) (_ *ChartRepository, retErr error) {
	dir, err := os.MkdirTemp("", "reflux-charts-")
	if err != nil {
		return nil, fmt.Errorf("creating the chart repository's directory: %w", err)
	}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, os.RemoveAll(dir))
		}
	}()
	for _, c := range charts {
		ch, err := loader.LoadDir(c)
		if err != nil {
			return nil, fmt.Errorf("loading chart %s: %w", c, err)
		}
		if _, err := chartutil.Save(ch, dir); err != nil {
			return nil, fmt.Errorf("packaging chart %s: %w", c, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the chart repository: %w", err)
	}
	r := &ChartRepository{URL: "http://" + l.Addr().String(), dir: dir}
	index, err := repo.IndexDirectory(dir, r.URL)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("indexing the charts: %w", err), l.Close())
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("writing the index: %w", err), l.Close())
	}
	r.srv = &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(l) //nolint:errcheck // ends with Close
	return r, nil
}

// Close stops serving and removes the packaged charts.
func (r *ChartRepository) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(r.srv.Shutdown(ctx), os.RemoveAll(r.dir))
}
