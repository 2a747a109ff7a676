package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestCRDsInstalled checks Flux's CRDs and every CRD generated into
// config/crd/bases are served.
func TestCRDsInstalled(t *testing.T) {
	g := NewWithT(t)
	names := []string{"gitrepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io"}
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range files {
		b, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		var crd struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		g.Expect(yaml.Unmarshal(b, &crd)).To(Succeed(), f)
		names = append(names, crd.Metadata.Name)
	}
	for _, name := range names {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd)).To(Succeed(), name)
	}
}
