// Package metrics holds reflux's Prometheus metrics, in the style of
// Flux's gotk_* metrics: labels name namespaces, Kustomizations, kinds,
// severities and actions, never individual objects, so cardinality stays
// bounded. Every stage of the engine records through a *Metrics, and a
// nil *Metrics records nothing.
package metrics
