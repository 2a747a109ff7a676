package source

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reflux-dev/reflux/kustomize"
)

func fakeReader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kustomizev1.AddToScheme, sourcev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func kustomizationOf(kind, ns string, subst ...kustomizev1.SubstituteReference) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "shop"}}
	ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: kind, Name: "fleet", Namespace: ns}
	if len(subst) > 0 {
		ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: subst}
	}
	return ks
}

func gitRepository(ns string, artifact *meta.Artifact) *sourcev1.GitRepository {
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"}}
	repo.Spec.URL = "https://git.example.com/fleet.git"
	repo.Spec.Interval = metav1.Duration{Duration: 5 * time.Minute}
	repo.Status.Artifact = artifact
	return repo
}

func TestResolve(t *testing.T) {
	artifact := &meta.Artifact{Revision: "main@sha1:1", URL: "http://source-controller/fleet.tar.gz"}
	vars := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "vars"}, Data: map[string]string{"env": "prod"}}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "creds"}, Data: map[string][]byte{"token": []byte("s3cret")}}
	tests := []struct {
		name    string
		ks      *kustomizev1.Kustomization
		objs    []client.Object
		want    Source
		wantErr string
	}{
		{name: "a GitRepository in the Kustomization's namespace", ks: kustomizationOf(sourcev1.GitRepositoryKind, ""),
			objs: []client.Object{gitRepository("apps", artifact)},
			want: Source{Artifact: artifact, Interval: 5 * time.Minute, URL: "https://git.example.com/fleet.git"}},
		{name: "a sourceRef into another namespace", ks: kustomizationOf(sourcev1.GitRepositoryKind, "flux-system"),
			objs: []client.Object{gitRepository("flux-system", artifact)},
			want: Source{Artifact: artifact, Interval: 5 * time.Minute, URL: "https://git.example.com/fleet.git"}},
		{name: "no artifact yet", ks: kustomizationOf(sourcev1.GitRepositoryKind, ""),
			objs: []client.Object{gitRepository("apps", nil)}, wantErr: "GitRepository apps/fleet has no artifact"},
		{name: "no source", ks: kustomizationOf(sourcev1.OCIRepositoryKind, ""), wantErr: "getting OCIRepository apps/fleet"},
		{name: "a kind Flux does not serve", ks: kustomizationOf("HelmChart", ""), wantErr: `source kind "HelmChart" is not supported`},
		{name: "substituteFrom, as kustomize-controller reads it", ks: kustomizationOf(sourcev1.GitRepositoryKind, "",
			kustomizev1.SubstituteReference{Kind: "ConfigMap", Name: "vars"},
			kustomizev1.SubstituteReference{Kind: "Secret", Name: "creds"},
			kustomizev1.SubstituteReference{Kind: "ConfigMap", Name: "absent", Optional: true}),
			objs: []client.Object{gitRepository("apps", artifact), vars, creds},
			want: Source{Artifact: artifact, Interval: 5 * time.Minute, URL: "https://git.example.com/fleet.git",
				SubstituteFrom: []kustomize.SubstituteSource{
					{Kind: "ConfigMap", Name: "vars", Data: map[string]string{"env": "prod"}},
					{Kind: "Secret", Name: "creds", Data: map[string]string{"token": "s3cret"}},
				}}},
		{name: "a required substituteFrom that is missing", ks: kustomizationOf(sourcev1.GitRepositoryKind, "",
			kustomizev1.SubstituteReference{Kind: "ConfigMap", Name: "absent"}),
			objs: []client.Object{gitRepository("apps", artifact)}, wantErr: "reading substituteFrom ConfigMap apps/absent"},
		{name: "a substituteFrom kind Flux does not read", ks: kustomizationOf(sourcev1.GitRepositoryKind, "",
			kustomizev1.SubstituteReference{Kind: "Pod", Name: "x"}),
			objs: []client.Object{gitRepository("apps", artifact)}, wantErr: `substituteFrom kind "Pod" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Resolve(context.Background(), fakeReader(t, tt.objs...), tt.ks)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			// The fake client round-trips the artifact through JSON.
			g.Expect(got.Artifact.Revision).To(Equal(tt.want.Artifact.Revision))
			got.Artifact = tt.want.Artifact
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestGitRepository(t *testing.T) {
	g := NewWithT(t)
	c := fakeReader(t, gitRepository("flux-system", nil))
	repo, err := GitRepository(context.Background(), c, kustomizationOf(sourcev1.GitRepositoryKind, "flux-system"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Spec.URL).To(Equal("https://git.example.com/fleet.git"))

	repo, err = GitRepository(context.Background(), c, kustomizationOf(sourcev1.BucketKind, ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo).To(BeNil(), "another kind has no GitRepository")

	_, err = GitRepository(context.Background(), c, kustomizationOf(sourcev1.GitRepositoryKind, ""))
	g.Expect(err).To(MatchError(ContainSubstring("getting GitRepository apps/fleet")))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "callers tell a missing source from a failed read")
}
