// Package sidebyside holds BenchmarkSideBySide (issue 9): reflux and the
// real kustomize-controller, in one environment on the same machine, on
// the figures a platform team weighs before installing reflux:
//
//   - how long a live edit takes to be noticed: reflux's hold and Held
//     record against kustomize-controller's revert at a 1m interval;
//   - API requests per minute with nothing drifting, each read from the
//     process's own rest_client_requests_total;
//   - reflux's memory and processor time as the watched tree grows;
//   - a burst of 1,000 live edits in about a second across 10
//     Kustomizations: how many commits reflux writes for it, and that no
//     edit is lost, live or in Git.
//
// Every case runs a fresh environment (internal/testenv) with the real
// `reflux manager` binary as a child process, so /proc and /metrics speak
// for it alone. Environments start only under -bench; `go test ./...`
// runs the package's fixture tests in seconds.
package sidebyside
