package kustomize

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%s\x00", p, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestBuild(t *testing.T) {
	load := func(p string) *BuildOptions {
		ks, err := LoadKustomization(filepath.Join("testdata", p))
		if err != nil {
			t.Fatal(err)
		}
		return &BuildOptions{Root: filepath.Join("testdata", filepath.Dir(p)), Kustomization: ks}
	}
	tests := []struct {
		name   string
		opts   *BuildOptions
		kind   string
		obj    string
		fields []string
		want   interface{}
	}{
		{"plain dir gets a generated kustomization", &BuildOptions{Root: "testdata/plain-dir"}, "ConfigMap", "web-config", []string{"data", "LOG_LEVEL"}, "info"},
		{"overlay replicas", load("base-overlays/flux-kustomization-prod.yaml"), "Deployment", "podinfo", []string{"spec", "replicas"}, int64(3)},
		{"overlay namePrefix and namespace", load("base-overlays/flux-kustomization-dev.yaml"), "Deployment", "dev-podinfo", []string{"metadata", "namespace"}, "dev"},
		{"spec targetNamespace", load("flux-spec/flux-kustomization.yaml"), "Deployment", "prod-web", []string{"metadata", "namespace"}, "web-prod"},
		{"spec patches", load("flux-spec/flux-kustomization.yaml"), "Deployment", "prod-web", []string{"spec", "replicas"}, int64(5)},
		{"spec commonMetadata", load("flux-spec/flux-kustomization.yaml"), "Deployment", "prod-web", []string{"metadata", "annotations", "owner"}, "web-team@example.com"},
		{"inline substitute wins over substituteFrom", withVars(load("postbuild-substitution/flux-kustomization.yaml")), "Deployment", "billing", []string{"spec", "replicas"}, int64(3)},
		{"substitute disabled", withVars(load("postbuild-substitution/flux-kustomization.yaml")), "ConfigMap", "raw-template", []string{"data", "template"}, "${NOT_SUBSTITUTED}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := Build(context.Background(), *tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			obj := find(res.Objects, tt.kind, tt.obj)
			g.Expect(obj).NotTo(BeNil())
			got, ok, err := unstructured.NestedFieldNoCopy(obj.Object, tt.fields...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func withVars(o *BuildOptions) *BuildOptions {
	o.SubstituteFrom = []SubstituteSource{{Kind: "ConfigMap", Name: "cluster-vars", Data: map[string]string{"CLUSTER_NAME": "prod-eu", "DOMAIN": "example.com", "APP_VERSION": "1.0.0"}}}
	return o
}

func TestBuildNeverWritesTheTree(t *testing.T) {
	g := NewWithT(t)
	root := "testdata/plain-dir"
	before := treeHash(t, root)
	res, err := Build(context.Background(), BuildOptions{Root: root})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Generated).To(BeTrue())
	g.Expect(res.GeneratedResources).To(ContainElement("./deployment.yaml"))
	g.Expect(treeHash(t, root)).To(Equal(before))
	_, err = os.Stat(filepath.Join(root, "kustomization.yaml"))
	g.Expect(os.IsNotExist(err)).To(BeTrue())
}

func TestBuildErrors(t *testing.T) {
	g := NewWithT(t)
	_, err := Build(context.Background(), BuildOptions{Root: "testdata/plain-dir", Path: "missing"})
	g.Expect(err).To(MatchError(ErrPathNotFound))
	_, err = Build(context.Background(), BuildOptions{})
	g.Expect(err).To(HaveOccurred())
	// The path cannot escape the root.
	_, err = Build(context.Background(), BuildOptions{Root: "testdata/base-overlays/overlays", Path: "../base"})
	g.Expect(err).To(HaveOccurred())
}

func TestBuildNormalize(t *testing.T) {
	g := NewWithT(t)
	res, err := Build(context.Background(), BuildOptions{Root: "testdata/plain-dir", Normalize: true})
	g.Expect(err).NotTo(HaveOccurred())
	svc := find(res.Objects, "Service", "web")
	proto, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	g.Expect(proto[0]).To(HaveKeyWithValue("protocol", "TCP"))
}

// TestBuildUnbuildable: what kustomize-controller cannot build offline
// fails a faithful build with a one-line error, and SkipUnbuildable
// renders the local part without fetching or running anything.
func TestBuildUnbuildable(t *testing.T) {
	tests := []struct {
		tree, errText string
		local         string
	}{
		{"remote-base", "remote base: overlay/kustomization.yaml: resources entry https://github.com/example-org/platform-manifests//redis/base?ref=v1.4.0 is fetched", "redis-exporter"},
		{"helm-and-plugins", "kustomize build failed: trouble configuring builtin HelmChartInflationGenerator", "public"},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			g := NewWithT(t)
			ks, err := LoadKustomization(filepath.Join("testdata", tt.tree, "flux-kustomization.yaml"))
			g.Expect(err).NotTo(HaveOccurred())
			opts := BuildOptions{Root: filepath.Join("testdata", tt.tree), Kustomization: ks}
			_, err = Build(context.Background(), opts)
			g.Expect(err).To(MatchError(ContainSubstring(tt.errText)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(err.Error()).NotTo(ContainSubstring("reflux-build-"))
			before := treeHash(t, opts.Root)
			opts.SkipUnbuildable = true
			res, err := Build(context.Background(), opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Objects).To(HaveLen(1))
			g.Expect(res.Objects[0].GetName()).To(Equal(tt.local))
			g.Expect(treeHash(t, opts.Root)).To(Equal(before))
		})
	}
}

// TestLinkTreeCopiesWhatBuildsWrite: kustomization files are copies, so
// the generator's in-place write never reaches the source; other files
// are links to it.
func TestLinkTreeCopiesWhatBuildsWrite(t *testing.T) {
	g := NewWithT(t)
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "work")
	g.Expect(os.WriteFile(filepath.Join(src, "kustomization.yaml"), []byte("resources: [app.yaml]\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(src, "app.yaml"), []byte("kind: ConfigMap\n"), 0o644)).To(Succeed())
	g.Expect(linkTree(src, dst)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dst, "kustomization.yaml"), []byte("changed\n"), 0o644)).To(Succeed())
	data, err := os.ReadFile(filepath.Join(src, "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("resources: [app.yaml]\n"))
	a, err := os.Stat(filepath.Join(src, "app.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	b, err := os.Stat(filepath.Join(dst, "app.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.SameFile(a, b)).To(BeTrue())
}

// TestBuildStampsFluxsManagedBy: `buildMetadata: [managedByLabel]` names
// the kustomize-controller reflux pairs with, as that controller's own
// build stamps it, not the program that runs krusty.
func TestBuildStampsFluxsManagedBy(t *testing.T) {
	g := NewWithT(t)
	for _, tt := range []struct{ version, want string }{
		{"", "kustomize-" + PairedFluxVersion},
		{"v1.10.0", "kustomize-v1.10.0"},
	} {
		res, err := Build(context.Background(), BuildOptions{Root: "testdata/build-metadata", ManagedByVersion: tt.version})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Objects).NotTo(BeEmpty())
		for _, o := range res.Objects {
			g.Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", tt.want), o.GetName())
		}
	}
}

// TestPairedFluxVersion: the version reflux stamps by default is the
// kustomize-controller it is built against and tested with, so a bump of
// either that leaves the other behind fails here.
func TestPairedFluxVersion(t *testing.T) {
	g := NewWithT(t)
	mod, err := os.ReadFile("../go.mod")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(mod)).To(MatchRegexp(`(?m)^\s*github\.com/fluxcd/kustomize-controller/api ` + regexp.QuoteMeta(PairedFluxVersion) + `$`))
	env, err := os.ReadFile("../hack/testbin/versions.env")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(env)).To(MatchRegexp(`(?m)^KUSTOMIZE_CONTROLLER_VERSION=` + regexp.QuoteMeta(PairedFluxVersion) + `$`))
}
