// Package manager is reflux's composition root: it turns Options into a
// running set of controllers, the drift engine, the live watches and the
// adapters between them, registered with a controller-runtime manager.
//
// Flux's controllers keep this wiring in main.go; reflux keeps it in a
// package so that `reflux manager` (cmd/cli) and the tests that run reflux
// in-process share one wiring. Setup is the only place that knows every
// piece: the reconcilers in controllers/ take what they orchestrate as
// fields, and the engine takes its collaborators through the interfaces
// reverse/governor declares. Nothing but the CLI and the tests imports this
// package, so wiring never leaks into a library floor (issue 18).
//
// Besides Setup it holds what the manager itself is built from: the
// scheme, the cache and client options (Flux's sharding and namespace
// restrictions), and the record key Secret read before the engine starts.
package manager
