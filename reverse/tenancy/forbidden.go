package tenancy

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ForbiddenError is the apiserver's refusal of a request reflux made as an
// impersonated identity: the permission the identity lacks.
type ForbiddenError struct {
	// User is the identity reflux impersonated.
	User string
	// Subject is the user the apiserver refused: User, or reflux itself
	// when it may not impersonate User. "" when the message did not say.
	Subject string
	// Verb, Resource (with any subresource, "deployments/scale"), Group
	// and Namespace are the missing permission; Namespace is "" at the
	// cluster scope. Verb is "" when the apiserver's message did not say.
	Verb, Resource, Group, Namespace string
	// Name is the object the request was for.
	Name string
	// Err is the apiserver's error.
	Err error
	// Self is true when the refused identity is reflux's own, not one it
	// impersonated (AsOwnForbidden); User is then reflux's user, if the
	// apiserver's message named it.
	Self bool
}

func (e *ForbiddenError) Error() string {
	if e.Verb == "" {
		who := e.User
		if who == "" {
			who = "reflux"
		}
		return fmt.Sprintf("%s is forbidden: %v", who, e.Err)
	}
	where := "at the cluster scope"
	if e.Namespace != "" {
		where = fmt.Sprintf("in the namespace %q", e.Namespace)
	}
	who, as := e.User, ""
	if e.Subject != "" && e.Subject != e.User {
		who, as = e.Subject, fmt.Sprintf(" to act as %s", e.User)
	}
	return fmt.Sprintf("%s cannot %s resource %q in API group %q %s%s", who, e.Verb, e.Resource, e.Group, where, as)
}

func (e *ForbiddenError) Unwrap() error { return e.Err }

// The apiserver's RBAC refusal (k8s.io/apiserver's forbiddenMessage):
// `User "u" cannot patch resource "configmaps" in API group "" in the
// namespace "b"`, or `... at the cluster scope`. Verb and resource are
// only in the message; StatusDetails carries the group, the resource
// (as Kind) and the name.
var forbiddenMessage = regexp.MustCompile(`(?:User "([^"]*)" )?cannot (\S+) resource "([^"]*)"(?: in API group "([^"]*)")?(?: in the namespace "([^"]*)"| at the cluster scope)?`)

// AsForbidden returns the permission user lacks when err is the
// apiserver's Forbidden answer (wrapped or not) to a request made as user,
// or its refusal to let reflux impersonate user. ok is false for any other
// error; when user is "" (reflux's own identity, whose refusals are
// ordinary errors); and for a refusal of another user, such as one of
// reflux's own reads.

func AsForbidden(err error, user string) (*ForbiddenError, bool) {
	if user == "" {
		return nil, false
	}
	f, ok := parseForbidden(err)
	if !ok {
		return nil, false
	}
	f.User = user
	// reflux itself refused impersonation is about the tenant too: the
	// legacy verb is "impersonate", Kubernetes 1.35's constrained
	// impersonation (KEP-5284) reports "impersonate-on:<kind>:<verb>".
	if f.Subject != "" && f.Subject != user && !strings.HasPrefix(f.Verb, "impersonate") {
		return nil, false
	}
	return f, true
}

// AsOwnForbidden returns the permission reflux's own identity lacks when
// err is the apiserver's Forbidden answer to a request reflux made as
// itself. With RBAC that lists the kinds reflux may touch, rather than
// granting everything, that is a configuration problem to report, not an
// error to retry.
func AsOwnForbidden(err error) (*ForbiddenError, bool) {
	f, ok := parseForbidden(err)
	if !ok {
		return nil, false
	}
	f.User, f.Self = f.Subject, true
	return f, true
}

func parseForbidden(err error) (*ForbiddenError, bool) {
	var status apierrors.APIStatus
	if !apierrors.IsForbidden(err) || !errors.As(err, &status) {
		return nil, false
	}
	s := status.Status()
	f := &ForbiddenError{Err: err}
	if d := s.Details; d != nil {
		f.Resource, f.Group, f.Name = d.Kind, d.Group, d.Name
	}
	if m := forbiddenMessage.FindStringSubmatch(s.Message); m != nil {
		f.Subject, f.Verb, f.Resource, f.Group, f.Namespace = m[1], m[2], m[3], m[4], m[5]
	}
	return f, true
}
