package forge

import (
	"errors"
	"net/http"

	"github.com/google/go-github/v82/github"
)

// ReadOnlyError means the token may read the repository but not write
// its pull requests: the forge said so when asked (Check), or refused a
// write with 403 after it had let the same token read (Ensure, Close,
// Comment). A new token, or write access for the token's user, cures it;
// a retry does not. Issue 22 §3: such a token used to pass the check and
// show only as a failed write-back.
type ReadOnlyError struct {
	// Err is the forge's refusal of a write; nil when Check read the
	// user's permissions on the repository instead.
	Err error
}

func (e *ReadOnlyError) Error() string {
	if e.Err == nil {
		return "the token's user may read the repository but not write to it"
	}
	return "the token may read the repository but not write its pull requests: " + e.Err.Error()
}

func (e *ReadOnlyError) Unwrap() error { return e.Err }

// ReadOnly reports whether err is, or wraps, a *ReadOnlyError.
func ReadOnly(err error) bool {
	var r *ReadOnlyError
	return errors.As(err, &r)
}

// writing wraps the forge's answer to a write reflux asked (op). Every
// write follows a read the same token passed (finding the branch's pull
// request, or the pull request Ensure just created), so a 403 there is
// the token's missing write permission: a *ReadOnlyError. GitHub also
// answers 403 when it throttles; that is not the token's permissions.
func writing(op string, err error) *Error {
	if StatusCode(err) == http.StatusForbidden && !throttled(err) {
		err = &ReadOnlyError{Err: err}
	}
	return &Error{Op: op, Err: err}
}

// throttled reports whether err is GitHub's rate limit, which it may
// answer with 403 (go-github's RateLimitError and AbuseRateLimitError).
func throttled(err error) bool {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	return errors.As(err, &rl) || errors.As(err, &abuse)
}
