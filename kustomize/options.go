package kustomize

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
)

// BuildOptions configures a single Build call.
type BuildOptions struct {
	// Root is the root of the source tree (the repository work tree or the
	// extracted artifact). kustomize-controller refuses to load files outside
	// it, and so do we.
	Root string

	// Path is the directory to build, relative to Root. When empty, the
	// Kustomization's spec.path is used, and "./" when that is empty too.
	Path string

	// Kustomization is the Flux Kustomization whose spec is applied. It may
	// be nil, in which case the directory is built as a bare Kustomization
	// with an empty spec would build it.
	Kustomization *kustomizev1.Kustomization

	// KustomizationFile is the file, relative to Root or absolute, that
	// declares Kustomization. It is only used by the origin index to point
	// fields set by the spec at their line and column.
	KustomizationFile string

	// SubstituteFrom holds the already-resolved data of the ConfigMaps and
	// Secrets listed in spec.postBuild.substituteFrom, in the same order.
	// This library knows no cluster, so the caller reads them.
	SubstituteFrom []SubstituteSource

	// StrictSubstitutions fails the build when a variable without a default
	// is not set, like kustomize-controller's --feature-gates StrictPostBuildSubstitutions.
	StrictSubstitutions bool

	// Normalize applies the normalization kustomize-controller runs right
	// before server-side apply (defaults such as protocol: TCP on ports),
	// so the objects match what the controller sends to the API server.
	// Fields it adds have no origin and are refused by the origin index.
	Normalize bool

	// AllowRemoteBases lets krusty fetch remote bases. It is off by default:
	// a drift tracer must not depend on the network.
	AllowRemoteBases bool

	// SkipUnbuildable leaves out what reflux never fetches or runs: remote
	// resources entries, helmCharts, and plugins other than kustomize's
	// builtins. kustomize-controller cannot build such a tree offline, so
	// the render is then only its local part: for tracing, where the origin
	// index maps the local fields and refuses the rest by name
	// (remote-base, helm-chart, plugin). It is off for renders that must
	// equal what Flux applies.
	SkipUnbuildable bool

	// MaxFileSize is how large a file kustomize reads may be; 0 is
	// DefaultMaxFileSize. A larger one is refused (ErrFileTooLarge)
	// before anything parses it.
	MaxFileSize int64

	// MaxLoadSize is how many bytes the build may read in all; 0 is
	// DefaultMaxLoadSize. Past it the build is refused (ErrLoadTooLarge).
	MaxLoadSize int64

	// ManagedByVersion is the kustomize version kustomize-controller
	// stamps on app.kubernetes.io/managed-by for `buildMetadata:
	// [managedByLabel]`. kustomize takes it from the running binary's
	// build info, so kustomize-controller writes its own version
	// ("kustomize-v1.9.6") where reflux's build would write reflux's. Empty
	// is PairedFluxVersion.
	ManagedByVersion string
}

// SubstituteSource is one resolved entry of spec.postBuild.substituteFrom.
type SubstituteSource struct {
	// Kind is ConfigMap or Secret.
	Kind string
	// Name of the ConfigMap or Secret.
	Name string
	// Data holds the keys and values, Secret values already decoded.
	Data map[string]string
}
