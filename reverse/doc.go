// Package reverse is the Git-ward half of reflux: the drift engine and
// what it hands write-back. This package holds the types shared between
// them (DriftSet, BranchResult, Fingerprint). Sub-packages:
//
//   - governor: the engine, its live path, executor and work queues;
//   - observe and decide: the engine's pure steps;
//   - attribution: who made a change, from the audit log;
//   - drift: detection with Flux's server-side apply semantics;
//   - desired: rendering the applied revision, off the live path;
//   - source: a Kustomization's Flux source, its substituteFrom data and
//     the Secrets write-back needs, read from the cluster;
//   - classify and record: the policy's rules, and record names and merges;
//   - report: what status says (the Drifted condition, a policy's drift
//     report), as pure functions;
//   - branches and writeback: signed branches and their lifecycle;
//   - policy: what a ReverseSyncPolicy governs, and checks of it beyond
//     admission.
package reverse
