// Package report decides what reflux says in status, as pure functions
// over plain data: a Kustomization's Drifted condition from the engine's
// status, the render's state, the open records and the refused watches
// (Drifted), and a ReverseSyncPolicy's drift report from its records
// (Policy). The engine's own ReverseSynced condition comes from
// reverse/governor in the same way.
//
// The reconcilers read the cluster and write what these return; nothing
// here reads the cluster or the clock, so every status, reason and message
// is a row in a table test, and a reconciler stays a sequence of small
// steps (issue 18).
package report
