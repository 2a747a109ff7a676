// Package cli builds reflux's command line: `reflux manager` runs the
// controllers, and the other subcommands (such as `reflux trace`) call the
// same libraries from a terminal, in the style of the cobra-based flux CLI.
package cli
