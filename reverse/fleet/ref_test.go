package fleet

import (
	"errors"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{}
			ks.Namespace, ks.Name = "apps", "shop"
			ks.Spec.KubeConfig = tt.kubeConfig
			got, remote, err := RefOf(ks)
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
