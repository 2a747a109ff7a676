package tenancy

import (
	"errors"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ForbiddenError is the apiserver's refusal of a request reflux made as an
// impersonated identity: the permission the identity lacks.
type ForbiddenError struct {
	// User is the identity reflux impersonated.
	User string
	// Verb, Resource (with any subresource, "deployments/scale"), Group
	// and Namespace are the missing permission; Namespace is "" at the
	// cluster scope. Verb is "" when the apiserver's message did not say.
	Verb, Resource, Group, Namespace string
	// Name is the object the request was for.
	Name string
	// Err is the apiserver's error.
	Err error
}

func (e *ForbiddenError) Error() string {
	if e.Verb == "" {
		return fmt.Sprintf("%s is forbidden: %v", e.User, e.Err)
	}
	where := "at the cluster scope"
	if e.Namespace != "" {
		where = fmt.Sprintf("in the namespace %q", e.Namespace)
	}
	return fmt.Sprintf("%s cannot %s resource %q in API group %q %s", e.User, e.Verb, e.Resource, e.Group, where)
}

func (e *ForbiddenError) Unwrap() error { return e.Err }

// The apiserver's RBAC refusal (k8s.io/apiserver's forbiddenMessage):
// `User "u" cannot patch resource "configmaps" in API group "" in the
// namespace "b"`, or `... at the cluster scope`. Verb and resource are
// only in the message; StatusDetails carries the group, the resource
// (as Kind) and the name.
var forbiddenMessage = regexp.MustCompile(`cannot (\S+) resource "([^"]*)"(?: in API group "([^"]*)")?(?: in the namespace "([^"]*)"| at the cluster scope)?`)

// AsForbidden returns the permission user lacks when err is the
// apiserver's Forbidden answer (wrapped or not) to a request made as user;
// ok is false for any other error, or when user is "" (reflux's own
// identity, whose refusals are ordinary errors).
func AsForbidden(err error, user string) (*ForbiddenError, bool) {
	var status apierrors.APIStatus
	if user == "" || !apierrors.IsForbidden(err) || !errors.As(err, &status) {
		return nil, false
	}
	s := status.Status()
	f := &ForbiddenError{User: user, Err: err}
	if d := s.Details; d != nil {
		f.Resource, f.Group, f.Name = d.Kind, d.Group, d.Name
	}
	if m := forbiddenMessage.FindStringSubmatch(s.Message); m != nil {
		f.Verb, f.Resource, f.Group, f.Namespace = m[1], m[2], m[3], m[4]
	}
	return f, true
}
