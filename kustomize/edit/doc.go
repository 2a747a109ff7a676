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
// Every plan is verified by rendering the tree before and after: exactly
// the intended field of the intended object may change, otherwise the plan
// is refused with the diff of what moved. PlanAll does the same for
// several fields at once (all the drifted fields of one object).
package edit
