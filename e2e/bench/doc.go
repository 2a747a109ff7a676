// Package bench holds the drift engine's end-to-end benchmark (issue 4):
// reflux governing 1,000 live objects across 20 Kustomizations, against a
// real kube-apiserver, the real Flux source-controller and
// kustomize-controller, and a real git server. It measures how long a live
// edit takes to become a written Drift record plus an applied hold, and how
// many API requests reflux makes per edit.
//
// The environment is started only when benchmarks run (-bench), so `go
// test ./...` does not pay for 1,000 objects. REFLUX_BENCH_LOG=<file> keeps
// reflux's log after the run, to explain its numbers.
package bench
