// Package classify decides, for each drifted field, what reflux does with it
// (Merge, Alert or Ignore), how severe it is, and whether the object is held
// against Flux's revert. A policy's ordered rules come first; the built-in
// defaults cover the common cases when no rule matches.
package classify
