package branch

import "errors"

var (
	// ErrInvalidName is returned when a name is not a valid git branch name
	// (see git-check-ref-format(1)).
	ErrInvalidName = errors.New("invalid git branch name")
	// ErrInvalidPrefix is returned when the branch prefix is empty, does not
	// end in '/', or is not itself a valid ref component.
	ErrInvalidPrefix = errors.New("invalid branch prefix")
	// ErrSourceBranch is returned when a write-back branch would be the
	// source branch that Flux applies from.
	ErrSourceBranch = errors.New("refusing to write to the source branch")
	// ErrOutsidePrefix is returned when a branch lies outside the reflux
	// prefix and therefore belongs to someone else.
	ErrOutsidePrefix = errors.New("branch is outside the reflux prefix")
)
