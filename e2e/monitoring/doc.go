// Package monitoring checks the observability kit in config/monitoring
// with real tools: promtool checks and unit-tests the alert rules, and
// every PromQL expression of the Grafana dashboard and the rules is parsed
// with Prometheus' own parser and held against a live /metrics scrape of
// the reflux binary, after a drift, a manual hotfix and a write-back have
// gone through it, so a panel or an alert can never name a metric or a
// label reflux does not export.
package monitoring
