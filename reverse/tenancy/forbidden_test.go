package tenancy

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const tenant = "system:serviceaccount:team-a:tenant"

// forbidden builds the error the apiserver's RBAC refusal decodes to in a
// client: NewForbidden over k8s.io/apiserver's forbiddenMessage text.
func forbidden(gr schema.GroupResource, name, reason string) error {
	return apierrors.NewForbidden(gr, name, errors.New(reason))
}

func TestAsForbidden(t *testing.T) {
	configMaps := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name   string
		err    error
		user   string
		wantOK bool
		want   ForbiddenError
		msg    string
	}{
		{
			name: "namespaced", user: tenant, wantOK: true,
			err:  forbidden(configMaps, "shared", `User "`+tenant+`" cannot patch resource "configmaps" in API group "" in the namespace "team-b"`),
			want: ForbiddenError{User: tenant, Subject: tenant, Verb: "patch", Resource: "configmaps", Namespace: "team-b", Name: "shared"},
			msg:  `system:serviceaccount:team-a:tenant cannot patch resource "configmaps" in API group "" in the namespace "team-b"`,
		},
		{
			name: "wrapped, with a group and a subresource", user: tenant, wantOK: true,
			err: fmt.Errorf("detecting drift: %w", forbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web",
				`User "`+tenant+`" cannot patch resource "deployments/scale" in API group "apps" in the namespace "team-b"`)),
			want: ForbiddenError{User: tenant, Subject: tenant, Verb: "patch", Resource: "deployments/scale", Group: "apps", Namespace: "team-b", Name: "web"},
		},
		{
			name: "cluster scope", user: tenant, wantOK: true,
			err: forbidden(schema.GroupResource{Resource: "namespaces"}, "team-b",
				`User "`+tenant+`" cannot patch resource "namespaces" in API group "" at the cluster scope`),
			want: ForbiddenError{User: tenant, Subject: tenant, Verb: "patch", Resource: "namespaces", Name: "team-b"},
			msg:  `system:serviceaccount:team-a:tenant cannot patch resource "namespaces" in API group "" at the cluster scope`,
		},
		{
			name: "reflux may not impersonate the account", user: tenant, wantOK: true,
			err: forbidden(schema.GroupResource{Resource: "serviceaccounts"}, "tenant",
				`User "system:serviceaccount:reflux-system:reflux-controller" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"`),
			want: ForbiddenError{User: tenant, Subject: "system:serviceaccount:reflux-system:reflux-controller", Verb: "impersonate",
				Resource: "serviceaccounts", Namespace: "team-a", Name: "tenant"},
			msg: `system:serviceaccount:reflux-system:reflux-controller cannot impersonate resource "serviceaccounts" in API group "" ` +
				`in the namespace "team-a" to act as system:serviceaccount:team-a:tenant`,
		},
		{
			name: "reflux may not impersonate, constrained impersonation's words", user: tenant, wantOK: true,
			err: forbidden(configMaps, "shared",
				`User "system:serviceaccount:reflux-system:reflux-controller" cannot impersonate-on:serviceaccount:patch resource "configmaps" in API group "" in the namespace "team-b"`),
			want: ForbiddenError{User: tenant, Subject: "system:serviceaccount:reflux-system:reflux-controller", Verb: "impersonate-on:serviceaccount:patch",
				Resource: "configmaps", Namespace: "team-b", Name: "shared"},
		},
		{
			name: "a refusal of reflux's own request is not the tenant's", user: tenant,
			err: forbidden(schema.GroupResource{Group: "reflux.dev", Resource: "drifts"}, "rec",
				`User "system:serviceaccount:reflux-system:reflux-controller" cannot get resource "drifts" in API group "reflux.dev" in the namespace "team-a"`),
		},
		{
			name: "a refusal without RBAC's words keeps the details", user: tenant, wantOK: true,
			err:  forbidden(configMaps, "shared", "denied by admission policy"),
			want: ForbiddenError{User: tenant, Resource: "configmaps", Name: "shared"},
		},
		{name: "reflux's own identity", user: "",
			err: forbidden(configMaps, "shared", `User "x" cannot patch resource "configmaps" in API group "" in the namespace "b"`)},
		{name: "not a refusal", user: tenant, err: apierrors.NewConflict(configMaps, "shared", errors.New("changed"))},
		{name: "not an API error", user: tenant, err: errors.New("connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, ok := AsForbidden(tt.err, tt.user)
			g.Expect(ok).To(Equal(tt.wantOK))
			if !ok {
				g.Expect(f).To(BeNil())
				return
			}
			g.Expect(errors.Is(f, tt.err)).To(BeTrue(), "the apiserver's error is kept")
			got := *f
			got.Err = nil
			g.Expect(got).To(Equal(tt.want))
			if tt.msg != "" {
				g.Expect(f.Error()).To(Equal(tt.msg))
			}
			if tt.want.Verb == "" {
				g.Expect(f.Error()).To(ContainSubstring("denied by admission policy"))
			}
		})
	}
}

func TestAsOwnForbidden(t *testing.T) {
	const reflux = "system:serviceaccount:reflux-system:reflux-controller"
	tests := []struct {
		name   string
		err    error
		wantOK bool
		want   ForbiddenError
		msg    string
	}{
		{
			name: "the dry run of a kind reflux may watch but not patch", wantOK: true,
			err: fmt.Errorf("detecting drift: %w", forbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "gadget",
				`User "`+reflux+`" cannot patch resource "widgets" in API group "example.com" in the namespace "shop"`)),
			want: ForbiddenError{User: reflux, Subject: reflux, Verb: "patch", Resource: "widgets", Group: "example.com", Namespace: "shop",
				Name: "gadget", Self: true},
			msg: reflux + ` cannot patch resource "widgets" in API group "example.com" in the namespace "shop"`,
		},
		{
			name: "its own records", wantOK: true,
			err: forbidden(schema.GroupResource{Group: "reflux.dev", Resource: "drifts"}, "rec",
				`User "`+reflux+`" cannot create resource "drifts" in API group "reflux.dev" in the namespace "shop"`),
			want: ForbiddenError{User: reflux, Subject: reflux, Verb: "create", Resource: "drifts", Group: "reflux.dev", Namespace: "shop",
				Name: "rec", Self: true},
		},
		{
			name: "an admission policy's refusal names no user", wantOK: true,
			err:  forbidden(schema.GroupResource{Resource: "configmaps"}, "flags", "denied by admission policy"),
			want: ForbiddenError{Resource: "configmaps", Name: "flags", Self: true},
			msg:  `reflux is forbidden: configmaps "flags" is forbidden: denied by admission policy`,
		},
		{name: "not a refusal", err: apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "flags", errors.New("changed"))},
		{name: "not an API error", err: errors.New("connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, ok := AsOwnForbidden(tt.err)
			g.Expect(ok).To(Equal(tt.wantOK))
			if !ok {
				g.Expect(f).To(BeNil())
				return
			}
			got := *f
			got.Err = nil
			g.Expect(got).To(Equal(tt.want))
			if tt.msg != "" {
				g.Expect(f.Error()).To(Equal(tt.msg))
			}
		})
	}
}
