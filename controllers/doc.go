// Package controllers holds reflux's reconcilers, the live watch and the
// hold, and nothing else. The reconcilers read cluster state, call the
// libraries in reverse/ (which policy governs, what a source serves, what
// status says) and write status, events and metrics in Flux's conventions.
// The live watch feeds the engine and serves it the live objects; the hold
// and the hotfix mark are reflux's own writes to them.
//
// The wiring lives in cmd/manager and the adapters with the packages they
// serve, so this package imports no write-back, forge or audit code: it
// orchestrates the engine and does not hold it (issue 18).
package controllers
