// Package message renders the commit message of a write-back commit.
//
// The body comes from a Go text/template (DefaultTemplate unless the
// operator configures one) fed with Data: one Field per drifted value with
// its object, JSON pointer, git and live values, origin file:line, last
// modifier, first-seen time and severity. reflux then appends its own
// trailers as the last paragraph: what identifies the branch's drift set
// (Reflux-Fingerprint and friends) and where the change came from
// (Provenance: the records, rules, severity, field managers and audited
// users). docs/commit-trailers.md lists every trailer.
//
// Every value that reaches the template comes from the cluster or from Git
// and may be hostile: a live value containing "\nReflux-Fingerprint: x"
// must not forge a trailer, and a value with "\n\n" must not start a new
// paragraph. Render therefore escapes control characters in every string
// before the template sees it, so each value stays on its own line.
package message
