// Package governor is reflux's drift engine: it wires the engine's stages
// in the order a live change goes through them, and is what the cluster
// side (controllers/) calls. It keeps no state of its own: each stage owns
// its state behind its own lock, and stages hand each other copies.
//
//	watch event ──▶ intake ──▶ (governor.Handle) ──▶ evaluate ──▶ execute ──▶ record + hold
//	                  │                                              ▲
//	                  └── parked while the render is not current      │
//	records ─────────────────▶ writeback/scheduler ── transitions ──┘ (branch, pull request)
//	hold expiries ───────────▶ expiry ─────────────── decisions ────┘
//
// The stages:
//
//   - reverse/intake: the live queue keyed by object, the registry of
//     governed Kustomizations and their renders, parked changes, resyncs,
//     and what waits on the audit log.
//   - reverse/evaluate: one dry run as the Kustomization's identity, then
//     the pure steps (reverse/observe, reverse/decide) to a decision.
//   - reverse/execute: the single writer of Drift records and holds.
//   - reverse/writeback/scheduler: write-back off the live path, one worker
//     per repository; its results come back as decide.OnBranch transitions.
//   - reverse/expiry: one timer per limited hold, and the releases a
//     closed record still owes.
//   - reverse/owed: the releases Forget owes the holds no record owns,
//     retried until they happen.
//
// Handle (handle.go) is the walk between the intake's worker and the
// executor: a deletion, an audited Secret write or a live object; skip
// what is known clean; park what cannot be evaluated yet (held where Flux
// would revert it); evaluate and write the rest.
//
// # The live-path rule
//
// The live path (watch event → dry run → hold → record) never waits on
// rendering, Git or reporting, and it never drops a change (see
// reverse/intake for how). Renders run on the desired.Renderer's own
// goroutines, write-back on the scheduler's workers, and status reporting
// in the Kustomization reconciler.
package governor
