// Package intake is the first stage of the engine: it takes every change
// to a governed live object and keeps it until it has been evaluated. It
// owns the registry of governed Kustomizations (what each governs, its
// latest render, whether that render is current), the bounded live queue
// keyed by object, the changes parked while a render is not current, the
// resync of a Kustomization's objects, and what it waits on for the audit
// log. Its workers hand each change to a Handler (the engine's walk
// through evaluation and execution).
//
// # The live-path rule
//
// The live path never waits on rendering, Git or reporting, and it never
// drops a change:
//
//   - The watch handlers only classify the writers and queue the object,
//     keyed by object: repeated updates coalesce (earliest sighting, every
//     writer, the latest objects written by a writer Flux reverts), so
//     the queue never holds more entries than there are governed objects.
//   - A change that arrives while the render of the applied revision is
//     not current is parked, keyed by object, and evaluated the moment the
//     render is current (Publish flushes it to the live queue).
//   - A change Flux would revert that waits in the live queue behind
//     others (a new leader's first list, a burst) is held ahead of its
//     evaluation by the hold lane (holdlane.go): one request, where an
//     evaluation costs several.
//   - A change whose evaluation fails is put back with its first sighting
//     and retried with backoff; one a missing permission refuses is kept,
//     reported, and looked at again slowly (from 2s, doubling to 5m), and
//     at the next resync or change.
package intake
