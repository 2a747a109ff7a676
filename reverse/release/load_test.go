package release

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	helmdriver "helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clientsetGetter serves Secrets from a client-go fake, in which Helm's
// own driver wrote them, as controller-runtime's client.Reader would.
type clientsetGetter struct {
	cs  *fake.Clientset
	err error
}

func (c clientsetGetter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if c.err != nil {
		return c.err
	}
	s, err := c.cs.CoreV1().Secrets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

const storageKey = "sh.helm.release.v1.web.v2"

// stored writes release web v2 of namespace apps into namespace storage,
// with Helm's own Secrets driver.
func stored(t *testing.T) *fake.Clientset {
	cs := fake.NewClientset()
	rls := &helmrelease.Release{Name: "web", Namespace: "apps", Version: 2,
		Info:     &helmrelease.Info{Status: helmcommon.StatusDeployed},
		Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"}
	if err := helmdriver.NewSecrets(cs.CoreV1().Secrets("storage")).Create(storageKey, rls); err != nil {
		t.Fatalf("storing release: %v", err)
	}
	return cs
}

func TestLoad(t *testing.T) {
	ref := Ref{Name: "web", Namespace: "apps", Version: 2, StorageNamespace: "storage"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, storageKey, errors.New("no"))
	tests := []struct {
		name   string
		ref    Ref
		getter func(cs *fake.Clientset) SecretGetter
		want   error // nil: the release loads
		apiErr bool
	}{
		{name: "the release", ref: ref},
		{name: "another version is not there", ref: Ref{Name: "web", Namespace: "apps", Version: 3, StorageNamespace: "storage"},
			want: ErrReleaseNotFound},
		{name: "another storage namespace holds nothing", ref: Ref{Name: "web", Namespace: "apps", Version: 2, StorageNamespace: "apps"},
			want: ErrReleaseNotFound},
		{name: "a release of another namespace under the name", ref: Ref{Name: "web", Namespace: "other", Version: 2, StorageNamespace: "storage"},
			want: ErrReleaseUndecodable},
		{name: "data Helm cannot decode", ref: ref, want: ErrReleaseUndecodable,
			getter: func(cs *fake.Clientset) SecretGetter {
				s, _ := cs.CoreV1().Secrets("storage").Get(context.Background(), storageKey, metav1.GetOptions{})
				s.Data["release"] = []byte("not base64!")
				_, _ = cs.CoreV1().Secrets("storage").Update(context.Background(), s, metav1.UpdateOptions{})
				return clientsetGetter{cs: cs}
			}},
		{name: "the apiserver refuses", ref: ref, apiErr: true,
			getter: func(cs *fake.Clientset) SecretGetter { return clientsetGetter{cs: cs, err: forbidden} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cs := stored(t)
			var getter SecretGetter = clientsetGetter{cs: cs}
			if tt.getter != nil {
				getter = tt.getter(cs)
			}
			rls, err := Load(context.Background(), getter, tt.ref)
			switch {
			case tt.apiErr:
				g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
				g.Expect(errors.Is(err, ErrReleaseNotFound) || errors.Is(err, ErrReleaseUndecodable)).To(BeFalse())
			case tt.want != nil:
				g.Expect(errors.Is(err, tt.want)).To(BeTrue(), "%v", err)
				g.Expect(rls).To(BeNil())
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(rls.Name).To(Equal("web"))
				g.Expect(rls.Version).To(Equal(2))
				g.Expect(rls.Manifest).To(ContainSubstring("kind: ConfigMap"))
			}
		})
	}
	_, err := Load(context.Background(), nil, ref)
	NewWithT(t).Expect(err).To(HaveOccurred())
}

// TestLoadNeverWrites: the Secrets source refuses everything but Get, so
// reading a release cannot change Helm's storage.
func TestLoadNeverWrites(t *testing.T) {
	g := NewWithT(t)
	src := &secretSource{ctx: context.Background(), get: clientsetGetter{cs: stored(t)}, namespace: "storage"}
	ctx := context.Background()
	_, err := src.Create(ctx, &corev1.Secret{}, metav1.CreateOptions{})
	g.Expect(err).To(MatchError(errGetOnly))
	_, err = src.Update(ctx, &corev1.Secret{}, metav1.UpdateOptions{})
	g.Expect(err).To(MatchError(errGetOnly))
	g.Expect(src.Delete(ctx, storageKey, metav1.DeleteOptions{})).To(MatchError(errGetOnly))
	g.Expect(src.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(MatchError(errGetOnly))
	_, err = src.Patch(ctx, storageKey, "", nil, metav1.PatchOptions{})
	g.Expect(err).To(MatchError(errGetOnly))
	_, err = src.Apply(ctx, nil, metav1.ApplyOptions{})
	g.Expect(err).To(MatchError(errGetOnly))
	_, err = src.List(ctx, metav1.ListOptions{})
	g.Expect(err).To(MatchError(errGetOnly))
	_, err = src.Watch(ctx, metav1.ListOptions{})
	g.Expect(err).To(MatchError(errGetOnly))
	_, err = src.Get(ctx, storageKey, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}
