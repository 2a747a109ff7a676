// Package scale holds BenchmarkScale: what reflux costs as the tree it
// governs grows, and whether it still catches every live edit. Each case
// (1,000 objects in 20 Kustomizations, 10,000 in 100, 10,000 in one) runs
// in a fresh environment of its own, with a real kube-apiserver, the real
// Flux source-controller and kustomize-controller, a real git server and
// the real `reflux manager` binary as a child process, so its memory and
// processor time are read from /proc for that case alone.
//
// Environments are started only under -bench, so `go test ./...` runs the
// package's fixture tests in seconds. REFLUX_SCALE_LOGS=<dir> keeps each
// case's reflux and kustomize-controller logs, to explain its numbers.
package scale
