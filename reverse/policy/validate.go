package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"text/template"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// ErrInvalid marks a policy that cannot be used as written. Callers treat
// it as a configuration error: Stalled, with no retry until the spec
// changes.
var ErrInvalid = errors.New("invalid policy")

// FieldError is an invalid value at a named field of the policy spec.
type FieldError struct {
	// Field is the path of the field, such as spec.rules[2].paths[0].
	Field string
	// Reason says what is wrong.
	Reason string
	// Cause, when set, is the error that made the value invalid, for
	// callers that name it (forge.ReadOnly).
	Cause error
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap lets errors.Is(err, ErrInvalid) match, and errors.As reach the
// Cause.
func (e *FieldError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Cause}
}

// Validate checks the parts of spec that admission cannot. It returns every
// problem found, joined, so a user fixes them in one pass.
func Validate(spec *refluxv1.ReverseSyncPolicySpec) error {
	var errs []error
	for i, rule := range spec.Rules {
		for j, glob := range rule.Paths {
			if _, err := path.Match(glob, ""); err != nil {
				errs = append(errs, &FieldError{
					Field:  fmt.Sprintf("spec.rules[%d].paths[%d]", i, j),
					Reason: fmt.Sprintf("malformed glob %q: %v", glob, err),
				})
			}
		}
	}
	if tmpl := spec.Git.CommitMessageTemplate; tmpl != "" {
		if _, err := template.New("commit").Option("missingkey=error").Parse(tmpl); err != nil {
			errs = append(errs, &FieldError{
				Field:  "spec.git.commitMessageTemplate",
				Reason: fmt.Sprintf("template does not parse: %v", err),
			})
		}
	}
	return errors.Join(errs...)
}

// CheckBranchPrefix reports whether prefix could name, or collide with,
// sourceBranch. Git stores branches as files under refs/heads, so a prefix
// whose directory is the source branch (main/ for main) cannot coexist with
// it, and a source branch inside the prefix would be one reflux may push to.
func CheckBranchPrefix(prefix, sourceBranch string) error {
	if prefix == "" {
		prefix = refluxv1.DefaultBranchPrefix
	}
	if sourceBranch == "" {
		return nil
	}
	dir := strings.TrimSuffix(prefix, "/")
	switch {
	case strings.HasPrefix(sourceBranch, prefix):
		return &FieldError{
			Field:  "spec.git.branchPrefix",
			Reason: fmt.Sprintf("prefix %q contains the source branch %q", prefix, sourceBranch),
		}
	case dir == sourceBranch || strings.HasPrefix(dir, sourceBranch+"/"):
		return &FieldError{
			Field:  "spec.git.branchPrefix",
			Reason: fmt.Sprintf("prefix %q would nest branches under the source branch %q", prefix, sourceBranch),
		}
	}
	return nil
}
