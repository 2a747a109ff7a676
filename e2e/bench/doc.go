// Package bench holds reflux's end-to-end benchmarks, each against a real
// kube-apiserver, the real Flux source-controller and kustomize-controller,
// a real git server and the real `reflux manager` binary, built from the
// work tree (or $REFLUX_E2E_BIN) and run as a child process, so /proc and
// /metrics speak for it alone:
//
//   - BenchmarkLiveChange (issue 4): reflux governing 1,000 live objects
//     across 20 Kustomizations; how long a live edit takes to become a
//     held Drift record plus an applied hold, and how many API requests
//     reflux makes per edit.
//   - BenchmarkScale: what reflux costs as the tree it governs grows
//     (1,000 objects in 20 Kustomizations, 10,000 in 100, 10,000 in one),
//     and whether it still catches every live edit.
//   - BenchmarkSideBySide (issue 9): reflux beside the real
//     kustomize-controller on the figures a platform team weighs before
//     installing it: how long a live edit takes to be noticed, API
//     requests per minute with nothing drifting, memory and processor time
//     as the tree grows, and a burst of 1,000 live edits in about a second.
//   - BenchmarkFleet (issue 24): one hub governing three remote clusters
//     of 2,000 objects each through spec.kubeConfig; the hold latency per
//     spoke, the hub's memory and the watch connections reflux keeps open
//     in each spoke.
//
// The cases share one tree generator, one observer of holds and records,
// and one set of statistics (stats_test.go). Environments start only when
// benchmarks run (-bench): the scale and side-by-side cases each in a
// fresh one, the live-change fleet once for all its runs. `go test ./...`
// runs the package's tests of its trees and figures in seconds.
// REFLUX_E2E_LOGS=<dir> keeps each environment's logs, reflux's among
// them, to explain its numbers.
package bench
