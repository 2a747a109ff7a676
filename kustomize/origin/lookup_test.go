package origin

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize"
)

func buildCase(t *testing.T, tree, flux string, cases ...testCase) *Index {
	t.Helper()
	if len(cases) == 0 {
		cases = loadCases(t, "../testdata/"+tree, flux)
	}
	idx, _, err := Build(context.Background(), cases[0].opts)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestLookup(t *testing.T) {
	idx := buildCase(t, "base-overlays", "../testdata/base-overlays/flux-kustomization-staging.yaml")
	tests := []struct {
		name    string
		ref     ObjectRef
		pointer string
		want    Origin
		wantErr error
	}{
		{
			name: "images entry over the base", ref: ObjectRef{Kind: "Deployment", Namespace: "staging", Name: "podinfo"},
			pointer: "/spec/template/spec/containers/0/image",
			want: Origin{File: "overlays/staging/kustomization.yaml", Line: 11, Column: 13, Kind: KindImages, Chain: []Layer{
				{File: "base/deployment.yaml", Line: 17, Column: 18, Kind: KindResource},
				{File: "overlays/staging/kustomization.yaml", Line: 11, Column: 13, Kind: KindImages, Via: "images[0].newTag"},
			}},
		},
		{
			name: "group and kind case are optional", ref: ObjectRef{Group: "apps", Kind: "deployment", Namespace: "staging", Name: "podinfo"},
			pointer: "/spec/replicas",
			want: Origin{File: "overlays/staging/kustomization.yaml", Line: 8, Column: 12, Kind: KindReplicas, Chain: []Layer{
				{File: "base/deployment.yaml", Line: 6, Column: 13, Kind: KindResource},
				{File: "overlays/staging/kustomization.yaml", Line: 8, Column: 12, Kind: KindReplicas, Via: "replicas[0].count"},
			}},
		},
		{name: "unknown object", ref: ObjectRef{Kind: "Deployment", Namespace: "prod", Name: "podinfo"}, pointer: "/spec/replicas", wantErr: ErrObjectNotFound},
		{name: "not a leaf", ref: ObjectRef{Kind: "Deployment", Namespace: "staging", Name: "podinfo"}, pointer: "/spec", wantErr: ErrFieldNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := idx.Lookup(tt.ref, tt.pointer)
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestLookupRefusedAndHashAlias(t *testing.T) {
	g := NewWithT(t)
	idx := buildCase(t, "configmap-generator", "../testdata/configmap-generator/flux-kustomization.yaml")
	ref, err := idx.Resolve(ObjectRef{Kind: "ConfigMap", Name: "app-settings"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref.Name).To(MatchRegexp(`^app-settings-[a-z0-9]{10}$`))

	_, err = idx.Lookup(ref, "/metadata/name")
	var re *RefusedError
	g.Expect(errors.As(err, &re)).To(BeTrue())
	g.Expect(re.Reason).To(Equal(ReasonHashSuffix))

	o, err := idx.Lookup(ObjectRef{Kind: "ConfigMap", Name: "app-settings"}, "/data/LOG_LEVEL")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Kind).To(Equal(KindGeneratorLiteral))
	g.Expect(o.Chain).To(HaveLen(2))
}

func TestSubstitutionNamesVariable(t *testing.T) {
	g := NewWithT(t)
	idx := buildCase(t, "postbuild-substitution", "../testdata/postbuild-substitution/flux-kustomization.yaml")
	o, err := idx.Lookup(ObjectRef{Kind: "Deployment", Name: "billing"}, "/spec/template/spec/containers/0/env/1/value")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Kind).To(Equal(KindSubstitution))
	g.Expect(o.Variable).To(Equal("CLUSTER_NAME"))
	g.Expect(o.File).To(Equal("ConfigMap/cluster-vars"))
}

func TestModelFailureRefusesEverything(t *testing.T) {
	g := NewWithT(t)
	opts := kustomize.BuildOptions{Root: "../testdata/plain-dir"}
	res, err := kustomize.Build(context.Background(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	// Pretend the render came from a kustomization the model cannot read.
	res.Generated, res.Path = false, "sub"
	idx, err := NewIndex(opts, res)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.ModelErr).To(HaveOccurred())
	fields, err := idx.Fields(idx.Objects()[0])
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range fields {
		g.Expect(f.Refused).To(Equal(ReasonModelFailed))
	}
}

func TestIsRemote(t *testing.T) {
	g := NewWithT(t)
	g.Expect(isRemote("https://github.com/org/repo//base?ref=v1")).To(BeTrue())
	g.Expect(isRemote("github.com/org/repo/base")).To(BeTrue())
	g.Expect(isRemote("../base")).To(BeFalse())
}

// TestNotRenderedNamesGeneratedObject covers issue 21 §7: a generated
// object asked for by its generator's name, in the wrong namespace, is the
// first hint, said to carry a hash, ahead of same-named objects of other kinds.
func TestNotRenderedNamesGeneratedObject(t *testing.T) {
	idx := buildCase(t, "generator-hash-closest", "")
	secret := ""
	for _, r := range idx.Objects() {
		if r.Kind == "Secret" {
			secret = r.String()
		}
	}
	tests := []struct {
		name string
		ref  ObjectRef
		want string
	}{
		{
			name: "generator name without the namespace: the hashed Secret first",
			ref:  ObjectRef{Kind: "Secret", Name: "podinfo"},
			want: "closest rendered: " + secret + " (generated: its name carries a hash suffix; ask for Secret/podinfo/podinfo), ",
		},
		{
			name: "kind in any case",
			ref:  ObjectRef{Kind: "secret", Namespace: "default", Name: "podinfo"},
			want: "closest rendered: " + secret + " (generated",
		},
		{
			name: "another kind is unchanged: the same name first",
			ref:  ObjectRef{Kind: "Deployment", Name: "podinfo"},
			want: "closest rendered: Deployment.apps/podinfo/podinfo, ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := idx.Resolve(tt.ref)
			g.Expect(err).To(MatchError(ErrObjectNotFound))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}

// TestClosest ranks the hints of an object not rendered.
func TestClosest(t *testing.T) {
	obj := func(kind, ns, name string) *objectIndex {
		return &objectIndex{ref: ObjectRef{Kind: kind, Namespace: ns, Name: name}}
	}
	tests := []struct {
		name    string
		objects []*objectIndex
		ref     ObjectRef
		want    []string
	}{
		{
			name:    "same kind, name with a suffix, before other kinds of the very name",
			objects: []*objectIndex{obj("Deployment", "a", "web"), obj("Service", "a", "web"), obj("Secret", "a", "web-5g7hk2m9tb")},
			ref:     ObjectRef{Kind: "Secret", Name: "web"},
			want:    []string{"Secret/a/web-5g7hk2m9tb", "Deployment/a/web", "Service/a/web"},
		},
		{
			name:    "the very name and kind in another namespace still first",
			objects: []*objectIndex{obj("Deployment", "a", "web-canary"), obj("Deployment", "b", "web")},
			ref:     ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web"},
			want:    []string{"Deployment/b/web", "Deployment/a/web-canary"},
		},
		{
			name:    "a name with the asked one as a suffix, not a prefix, ranks as before",
			objects: []*objectIndex{obj("Service", "a", "web"), obj("Secret", "a", "prod-web")},
			ref:     ObjectRef{Kind: "Secret", Namespace: "a", Name: "web"},
			want:    []string{"Service/a/web", "Secret/a/prod-web"},
		},
		{
			name:    "sharing only a kind and namespace is no hint",
			objects: []*objectIndex{obj("Secret", "a", "db")},
			ref:     ObjectRef{Kind: "Secret", Namespace: "a", Name: "web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range (&Index{objects: tt.objects}).closest(tt.ref, 3) {
				got = append(got, o.ref.String())
			}
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

// TestUnrunTransformerRefusesWhatItSees (issue 21 §5): a KRM function
// transformer is never run, so every field of the objects it transforms is
// refused as plugin at its own entry, a field only the function would add
// included, while objects outside its kustomization map as usual.
func TestUnrunTransformerRefusesWhatItSees(t *testing.T) {
	idx := buildCase(t, "fn-transformer", "../testdata/fn-transformer/flux-kustomization.yaml")
	app := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "fns", Name: "app"}
	web := ObjectRef{Kind: "Service", Namespace: "fns", Name: "web"}
	execEntry := &Layer{File: "app/kustomization.yaml", Line: 4, Column: 5, Kind: KindResource, Via: "transformers"}
	containerEntry := &Layer{File: "web/kustomization.yaml", Line: 7, Column: 5, Kind: KindResource, Via: "transformers"}
	tests := []struct {
		name    string
		ref     ObjectRef
		pointer string
		want    Origin
		edit    *Layer // refused as plugin, to edit here
	}{
		{name: "a field the exec function would add", ref: app, pointer: "/spec/template/spec/containers/0/env/0/value", edit: execEntry},
		{name: "a field of the resource under the exec function", ref: app, pointer: "/spec/replicas", edit: execEntry},
		{name: "the namespace set around it", ref: app, pointer: "/metadata/namespace", edit: execEntry},
		{name: "an annotation the container function would add", ref: web, pointer: "/metadata/annotations/owner", edit: containerEntry},
		{name: "a port beside the container function", ref: web, pointer: "/spec/ports/0/port", edit: containerEntry},
		{
			name: "an object no function sees", ref: ObjectRef{Kind: "ConfigMap", Namespace: "fns", Name: "shared"}, pointer: "/data/REGION",
			want: Origin{File: "shared.yaml", Line: 6, Column: 11, Kind: KindResource, Chain: []Layer{{File: "shared.yaml", Line: 6, Column: 11, Kind: KindResource}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := idx.Lookup(tt.ref, tt.pointer)
			if tt.edit == nil {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tt.want))
				return
			}
			var re *RefusedError
			g.Expect(errors.As(err, &re)).To(BeTrue(), "%v", err)
			g.Expect(re.Reason).To(Equal(ReasonPlugin))
			g.Expect(re.Edit).To(Equal(tt.edit))
		})
	}
}
