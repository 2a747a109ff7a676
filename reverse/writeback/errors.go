package writeback

import "errors"

var (
	// ErrInvalidRequest is returned for a Request that can never succeed;
	// callers should stall rather than retry.
	ErrInvalidRequest = errors.New("invalid write-back request")
	// ErrSourceNotFound is returned when the source branch does not exist.
	ErrSourceNotFound = errors.New("source branch not found")
	// ErrGit wraps every failure to talk to the Git server; retry later.
	ErrGit = errors.New("git operation failed")
	// ErrNotMerged is returned when deleting a branch whose change is not
	// in the source branch yet.
	ErrNotMerged = errors.New("branch is not merged")
	// ErrMoved is returned when deleting a branch whose head is no longer
	// the commit the caller decided on: someone pushed since.
	ErrMoved = errors.New("branch moved")
	// ErrSuperseded means the drift set changed while it was being
	// written: nothing was pushed, and the caller writes the new set at
	// once. A Request's BeforePush returns an error wrapping it to stop a
	// run that is writing an outdated set; Run then answers Superseded.
	ErrSuperseded = errors.New("the drift set was superseded")
)
