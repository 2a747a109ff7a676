// Package reverse is the Git-ward half of reflux: the drift engine and
// what it hands write-back. This package holds the types shared between
// them (Governed, Snapshot, DriftSet, BranchResult, Fingerprint).
// Sub-packages:
//
//   - governor: the engine, wiring its stages in the order a live change
//     goes through them: intake (the live queue, governed Kustomizations,
//     parked changes, resyncs), evaluate (a dry run to a decision),
//     execute (the single writer of records and holds), expiry, and
//     writeback/scheduler (see docs/architecture.md);
//   - observe and decide: the engine's pure steps;
//   - metrics: the engine's Prometheus metrics;
//   - attribution: who made a change, from the audit log;
//   - drift: detection with Flux's server-side apply semantics;
//   - desired: rendering the applied revision, off the live path;
//   - source: a Kustomization's Flux source, its substituteFrom data and
//     the Secrets write-back needs, read from the cluster;
//   - classify and record: the policy's rules, and record names and merges;
//   - report: what status says (the Drifted condition, a policy's drift
//     report), as pure functions;
//   - writeback: write-back, one wing: the scheduler, what each branch
//     carries (branches), pull requests (forge), and signed commits;
//   - policy: what a ReverseSyncPolicy governs, and checks of it beyond
//     admission.
package reverse
