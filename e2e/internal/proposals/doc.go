// Package proposals checks reflux's first promise to a reviewer against
// the records and the repository: what reflux proposes is exactly the
// open records (issue 17).
//
//   - A record is Proposed only when its branch carries its edit: the
//     branch's render holds each of its written fields at its live value.
//   - A branch carries only the edits of the Proposed records on it: every
//     field its render changes against the source branch's render is a
//     field of one of them.
//   - A record that names a branch is Proposed, and a branch of reflux's
//     that no open record is on does not exist.
//
// Renders compare rendered objects, not text, so the check holds whatever
// file and line an edit landed on.
package proposals
