// Package branch names and checks the Git branches reflux writes fixes to.
//
// A write-back branch is named
//
//	<prefix><namespace>-<name>/<fingerprint>
//	<prefix><namespace>-<name>/needs-decision-<fingerprint>
//
// where the second form marks an Alert-kind change that a human must decide
// on (reflux never merges those). The prefix fences every branch reflux may
// touch: anything outside it, and the source branch itself, is refused with a
// sentinel error so a bug upstream can never make reflux push to main.
package branch
