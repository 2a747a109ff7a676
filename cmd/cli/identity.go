package cli

import (
	"fmt"

	"github.com/fluxcd/pkg/auth"
	"github.com/fluxcd/pkg/cache"
	feathelper "github.com/fluxcd/pkg/runtime/features"
	"github.com/go-logr/logr"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// tokenCacheDefaultMaxSize is kustomize-controller's default for
// --token-cache-max-size.
const tokenCacheDefaultMaxSize = 100

// setupWorkloadIdentity applies the feature gates and the default
// ServiceAccount of workload identity as kustomize-controller does at its
// start: fluxcd/pkg/auth keeps them process-wide.
func setupWorkloadIdentity(opts *ManagerOptions, log logr.Logger) error {
	features := map[string]bool{}
	auth.SetFeatureGates(features)
	if err := opts.FeatureGates.WithLogger(log).SupportedFeatures(features); err != nil {
		return fmt.Errorf("--feature-gates: %w", err)
	}
	// Enabled reads the gates SupportedFeatures loaded.
	enabled, err := feathelper.Enabled(auth.FeatureGateObjectLevelWorkloadIdentity)
	if err != nil {
		return fmt.Errorf("--feature-gates: %w", err)
	}
	if enabled {
		auth.EnableObjectLevelWorkloadIdentity()
	}
	if opts.DefaultKubeConfigServiceAccount != "" {
		auth.SetDefaultKubeConfigServiceAccount(opts.DefaultKubeConfigServiceAccount)
	}
	if auth.InconsistentObjectLevelConfiguration() {
		return auth.ErrInconsistentObjectLevelConfiguration
	}
	return nil
}

// newTokenCache is the cache of workload identity tokens, nil when
// --token-cache-max-size is 0, with kustomize-controller's metrics under
// reflux's prefix.
func newTokenCache(opts *ManagerOptions) (*cache.TokenCache, error) {
	if opts.TokenCache.MaxSize <= 0 {
		return nil, nil
	}
	c, err := cache.NewTokenCache(opts.TokenCache.MaxSize, cache.WithMaxDuration(opts.TokenCache.MaxDuration),
		cache.WithMetricsRegisterer(crmetrics.Registry), cache.WithMetricsPrefix("reflux_token_"))
	if err != nil {
		return nil, fmt.Errorf("creating the workload identity token cache: %w", err)
	}
	return c, nil
}
