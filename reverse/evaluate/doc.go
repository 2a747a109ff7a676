// Package evaluate is the engine's evaluation stage: from a live change
// and the render of the applied revision to a decision for its Drift
// record and hold. It makes the one server-side dry run drift detection
// needs (reverse/drift, as the Kustomization's identity), then the steps
// are pure: reverse/observe classifies the fields, reverse/decide says
// what to do. It keeps no state of its own; what it learns for the intake
// (the object is clean, a writer is not known yet) comes back in its
// result.
package evaluate
