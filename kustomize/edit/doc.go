// Package edit turns "this field of this rendered object should have this
// value" into the smallest change to the source files of a kustomize tree.
//
// Scalars are changed by splicing bytes at the origin's line and column, so
// comments, key order, indentation, quoting style, document separators and
// trailing newlines all survive. When the origin document is shared (a
// base used by several overlays, or a patch that fans out to several
// objects) and the caller does not allow writing shared files, the change
// is written in the built overlay instead: a replicas or images entry, or a
// strategic-merge patch file listed under patches.
//
// Every plan is verified by rendering the changed tree and comparing it
// with the render before: exactly the intended fields of the intended
// objects may change, otherwise the plan is refused with the diff of what
// moved.
//
// One build of a large tree takes minutes, so PlanSet plans a whole set of
// changes against one render the caller already has (Before), with no
// build, and verifies them together with one build. Each change is
// planned against the same origin index; the draft the set is written to
// records every splice and insertion and moves the index's lines and
// columns along, so later changes land where the text now is. Whether a
// new overlay images or replicas entry would reach other objects is read
// from the same render. Plan (one change) and PlanAll (all or nothing)
// are PlanSet with a render of their own. Every build goes through
// Options.Render.
package edit
