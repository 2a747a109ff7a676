// Package helmflux pins down what the real helm-controller (v1.6.2) does
// to a live edit of an object a chart rendered: in each drift detection
// mode, with ignore rules, at the next upgrade, and when the object
// carries helm.toolkit.fluxcd.io/driftDetection: disabled (issue 19). The
// chart, testdata/charts/app, is served from a GitRepository on the
// environment's git server; docs/flux-behaviour.md summarises the
// findings. No reflux runs here: these are Flux's facts that reflux's
// handling of Helm-rendered objects rests on.
package helmflux
