// Package chart says which Helm values key sets a field that a chart
// renders (issue 19 §5).
//
// Load reads a chart directory or packaged .tgz with Helm's loader;
// Render renders it offline with Helm's own engine, values coalescing and
// dependency processing (helm.sh/helm/v4, the version helm-controller
// v1.6.2 uses), as helm template does: default capabilities, no cluster
// lookups, NOTES.txt left out. Documents are split with Kubernetes' YAML
// reader and decoded as kubectl decodes them. Objects are keyed by
// apiVersion, kind, namespace and name; one without a namespace takes the
// release's, unless its kind is cluster-scoped (BuiltinClusterScoped, or
// the caller's Release.ClusterScoped, since offline a custom kind's scope
// is not known). Hooks are rendered like any other object.
package chart
