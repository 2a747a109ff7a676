// Package execute is the single writer of Drift records and holds: it
// applies a decision (reverse/decide) to the cluster. Every stage of the
// engine that changes a record goes through an Executor, which serialises
// its work per record, so a live evaluation, a write-back result and an
// expired hold never interleave on one record.
//
// What to write comes decided; the Executor only carries it out, in the
// order that keeps evidence: a record's spec and the object's hold go out
// together, a close is written before its release (so the release is
// final), and a record reflux did not seal is deleted without acting on
// anything it says.
package execute
