package fleet

import (
	"errors"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestRefOf(t *testing.T) {
	tests := []struct {
		name       string
		kubeConfig *meta.KubeConfigReference
		want       Ref
		remote     bool
		wantErr    bool
		wantString string
	}{
		{name: "no kubeConfig: the hub"},
		{name: "a Secret, default key", kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "spoke"}},
			want: Ref{Namespace: "apps", Secret: "spoke"}, remote: true, wantString: "Secret/spoke"},
		{name: "a Secret and a key", kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "spoke", Key: "admin.conf"}},
			want: Ref{Namespace: "apps", Secret: "spoke", Key: "admin.conf"}, remote: true, wantString: "Secret/spoke#admin.conf"},
		{name: "workload identity", kubeConfig: &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "aks"}},
			want: Ref{Namespace: "apps", ConfigMap: "aks"}, remote: true, wantString: "ConfigMap/aks"},
		{name: "a Secret wins, as in kustomize-controller", kubeConfig: &meta.KubeConfigReference{
			SecretRef: &meta.SecretKeyReference{Name: "spoke"}, ConfigMapRef: &meta.LocalObjectReference{Name: "aks"}},
			want: Ref{Namespace: "apps", Secret: "spoke"}, remote: true, wantString: "Secret/spoke"},
		{name: "empty", kubeConfig: &meta.KubeConfigReference{}, remote: true, wantErr: true},
	}
	// A HelmRelease names its cluster as a Kustomization does, and
	// helm-controller follows it as kustomize-controller does.
	kinds := map[string]func(*meta.KubeConfigReference) client.Object{
		"Kustomization": func(kc *meta.KubeConfigReference) client.Object {
			ks := &kustomizev1.Kustomization{}
			ks.Namespace, ks.Name = "apps", "shop"
			ks.Spec.KubeConfig = kc
			return ks
		},
		"HelmRelease": func(kc *meta.KubeConfigReference) client.Object {
			hr := &helmv2.HelmRelease{}
			hr.Namespace, hr.Name = "apps", "shop"
			hr.Spec.KubeConfig = kc
			return hr
		},
	}
	for kind, obj := range kinds {
		for _, tt := range tests {
			t.Run(kind+": "+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				got, remote, err := RefOf(obj(tt.kubeConfig))
				g.Expect(remote).To(Equal(tt.remote))
				if tt.wantErr {
					g.Expect(errors.Is(err, ErrUnsupportedKubeConfig)).To(BeTrue(), "%v", err)
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tt.want))
				if tt.remote {
					g.Expect(got.String()).To(Equal(tt.wantString))
				}
			})
		}
	}
	t.Run("another kind names no cluster", func(t *testing.T) {
		_, _, err := RefOf(&corev1.ConfigMap{})
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("names no cluster")))
	})
}

// TestKubeconfigOf: the key is picked as kustomize-controller picks it.
func TestKubeconfigOf(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		data    map[string][]byte
		want    string
		wantErr string
	}{
		{name: "value first", data: map[string][]byte{"value": []byte("a"), "value.yaml": []byte("b")}, want: "a"},
		{name: "value.yaml when no value", data: map[string][]byte{"value.yaml": []byte("b")}, want: "b"},
		{name: "neither", data: map[string][]byte{"other": []byte("c")}, wantErr: "neither a 'value' nor a 'value.yaml' key"},
		{name: "named key", key: "admin.conf", data: map[string][]byte{"value": []byte("a"), "admin.conf": []byte("d")}, want: "d"},
		{name: "named key missing, value not used", key: "admin.conf", data: map[string][]byte{"value": []byte("a")},
			wantErr: `has no key "admin.conf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := kubeconfigOf(Ref{Namespace: "apps", Secret: "spoke", Key: tt.key}, tt.data)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(got)).To(Equal(tt.want))
		})
	}
}
