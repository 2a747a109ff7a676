// Package cli builds reflux's command line: `reflux manager` runs the
// controllers, and the other subcommands (such as `reflux trace`) call the
// same libraries from a terminal, in the style of the cobra-based flux CLI.
//
// It sits on the top floor, beside the manager's wiring (cmd/manager) and
// under main.go only: nothing but main imports it. It left internal/ so that
// internal/ holds only the small libraries every floor uses (audit,
// jsonptr), and an import into internal/ always points down (issue 18).
package cli
