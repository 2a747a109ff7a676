package edit

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// TestWithinRefuses: a change inside a generated file's document is made
// only where the file sets the key, as a plain scalar, and only of a
// field read from a file.
func TestWithinRefuses(t *testing.T) {
	values := origin.ObjectRef{Kind: "ConfigMap", Namespace: "apps", Name: "podinfo-values"}
	for _, c := range []struct {
		name   string
		change Change
		says   string
	}{
		{name: "a key the file does not set", change: Change{Object: values, Pointer: "/data/values.yaml", Within: "/resources/requests/gpu", Value: "1"},
			says: "podinfo-values.yaml sets no /resources/requests/gpu"},
		{name: "a map, not a scalar", change: Change{Object: values, Pointer: "/data/values.yaml", Within: "/resources/limits", Value: "1"},
			says: "/resources/limits is not a plain scalar"},
		{name: "a field not read from a file", change: Change{Object: origin.ObjectRef{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease",
			Namespace: "apps", Name: "podinfo"}, Pointer: "/spec/interval", Within: "/x", Value: "1"},
			says: "/spec/interval is declared by resource, not read from a file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			build := buildOptions(t, caseSpec{}, "testdata/values-from-file/original")
			_, err := Plan(context.Background(), Options{Build: build}, c.change)
			g.Expect(err).To(MatchError(ErrUnsupported))
			g.Expect(err.Error()).To(ContainSubstring(c.says))
		})
	}
}
