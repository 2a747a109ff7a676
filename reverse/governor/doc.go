// Package governor is reflux's drift engine: it evaluates every change to
// the live objects of governed Kustomizations, records and holds drift,
// and hands each Kustomization's open drift to write-back, without ever
// letting slow work stand between a live change and its evidence.
//
// # The live-path rule
//
// The live path (watch event → dry run → hold → record) never waits on
// rendering, Git or reporting, and it never drops a change:
//
//   - Every update to a governed live object is queued, keyed by object, so
//     repeated updates of one object coalesce and the queue can never hold
//     more entries than there are governed objects.
//   - A change is evaluated at once when the render of the Kustomization's
//     applied revision is current. When it is not (the first render, a new
//     revision or spec being rendered, Flux rolling out a revision reflux has
//     not rendered, or a render that failed), the change is parked, keyed by
//     object, and evaluated as soon as the render is current.
//   - A parked change whose writer Flux reverts (a kubectl* field manager,
//     one of kustomize-controller's --override-manager names, or a write
//     managedFields cannot attribute, such as a removal) is held at once, so
//     Flux cannot erase the evidence while reflux catches up. The hold names
//     the record the change will get. It lasts until the change is
//     evaluated: then the hold stays if a field's rule holds it, and is
//     released otherwise (no drift, or no rule that holds).
//   - Renders run on the desired.Renderer's own goroutines, write-back on
//     one worker per repository, and status reporting in the Kustomization
//     reconciler; their results come back as decisions applied by the
//     executor, the single writer of Drift records.
//
// # Shape
//
// The steps are pure and live elsewhere: reverse/observe turns a dry run
// into a classified observation, reverse/decide says what to do with the
// record and the hold. The executor applies a decision; it is the only
// code that writes Drift records, serialised per record.
//
// A resync re-evaluates a Kustomization's objects when its render becomes
// current and at its interval. Objects evaluated clean and since written
// only by Flux, and objects drift.Detector.Unchanged clears, cost no dry
// run, so a resync of an undrifted tree makes no API requests.
package governor
