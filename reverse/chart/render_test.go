package chart

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRenderKeysObjects(t *testing.T) {
	g := NewWithT(t)
	r, err := Render(loadChart(t, "webapp"), releaseValues(t), testRelease)
	g.Expect(err).NotTo(HaveOccurred())

	var keys []string
	for _, o := range r.Objects {
		keys = append(keys, o.Key.String()+" "+o.Template)
	}
	// NOTES.txt and configmap.yaml's empty second document are left out;
	// the ClusterRole has no namespace, the others take the release's.
	g.Expect(keys).To(Equal([]string{
		"v1/ConfigMap/prod/shop-webapp-config templates/configmap.yaml",
		"apps/v1/Deployment/prod/shop-webapp templates/deployment.yaml",
		"rbac.authorization.k8s.io/v1/ClusterRole/shop-webapp-reader templates/rbac.yaml",
		"rbac.authorization.k8s.io/v1/RoleBinding/prod/shop-webapp-reader templates/rbac.yaml",
		"v1/Secret/prod/shop-webapp templates/secret.yaml",
		"v1/Service/prod/shop-webapp templates/service.yaml",
	}))

	d, ok := r.Get(deployment)
	g.Expect(ok).To(BeTrue())
	g.Expect(d.Object.Object["spec"]).To(HaveKeyWithValue("replicas", int64(3)))
	g.Expect(d.Object.GetNamespace()).To(BeEmpty(), "the key adds the namespace, the object is as rendered")
	rb, _ := r.Get(ObjectKey{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding", Namespace: "prod", Name: "shop-webapp-reader"})
	g.Expect(rb.Index).To(Equal(1))
}

func TestRenderClusterScopedOption(t *testing.T) {
	g := NewWithT(t)
	rel := testRelease
	rel.ClusterScoped = func(gk schema.GroupKind) bool { return gk.Kind == "Deployment" }
	r, err := Render(loadChart(t, "webapp"), releaseValues(t), rel)
	g.Expect(err).NotTo(HaveOccurred())
	_, ok := r.Get(ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop-webapp"})
	g.Expect(ok).To(BeTrue())
	_, ok = r.Get(ObjectKey{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Namespace: "prod", Name: "shop-webapp-reader"})
	g.Expect(ok).To(BeTrue(), "the option replaces the built-in list")
}

func TestRenderPackagedChart(t *testing.T) {
	g := NewWithT(t)
	tgz, err := chartutil.Save(loadChart(t, "webapp"), t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Base(tgz)).To(Equal("webapp-0.3.1.tgz"))

	packaged, err := Load(tgz)
	g.Expect(err).NotTo(HaveOccurred())
	fromTgz, err := Render(packaged, releaseValues(t), testRelease)
	g.Expect(err).NotTo(HaveOccurred())
	fromDir, err := Render(loadChart(t, "webapp"), releaseValues(t), testRelease)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fromTgz.Objects).To(HaveLen(len(fromDir.Objects)))
	for i, o := range fromDir.Objects {
		g.Expect(fromTgz.Objects[i].Key).To(Equal(o.Key))
		g.Expect(fromTgz.Objects[i].Object.Object).To(Equal(o.Object.Object))
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name   string
		chart  string
		values map[string]any
		want   error
		says   string
	}{
		{name: "template that does not parse", chart: "broken", want: ErrRender, says: "configmap.yaml"},
		{name: "required value emptied", chart: "webapp",
			values: map[string]any{"image": map[string]any{"repository": ""}}, want: ErrRender, says: "image.repository is required"},
		{name: "template that fails", chart: "strict", values: map[string]any{"mode": "slow"}, want: ErrRender, says: "mode must be fast or safe"},
		{name: "values JSON cannot hold", chart: "webapp", values: map[string]any{"bad": make(chan int)}, want: ErrValues},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Render(loadChart(t, tt.chart), tt.values, testRelease)
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(err.Error()).To(ContainSubstring(tt.says))
			_, err = Analyze(loadChart(t, tt.chart), tt.values, testRelease)
			g.Expect(err).To(MatchError(tt.want), "Analyze renders first and says why it cannot")
		})
	}
}

func TestLoadMissingChart(t *testing.T) {
	g := NewWithT(t)
	_, err := Load("testdata/charts/nope")
	g.Expect(errors.Is(err, fs.ErrNotExist)).To(BeTrue(), "%v", err)
	_, err = Load("testdata/values/release.yaml")
	g.Expect(err).To(HaveOccurred(), "a file that is no chart archive")
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want map[string]any
		err  bool
	}{
		{name: "numbers decode as Helm's", yaml: "replicaCount: 3\nimage: {tag: \"1.2\"}\n",
			want: map[string]any{"replicaCount": float64(3), "image": map[string]any{"tag": "1.2"}}},
		{name: "empty", yaml: "", want: map[string]any{}},
		{name: "unclosed flow sequence", yaml: "env: [a, b\n", err: true},
		{name: "not a map", yaml: "- a\n- b\n", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseValues([]byte(tt.yaml))
			if tt.err {
				g.Expect(err).To(MatchError(ErrValues))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(BeEquivalentTo(tt.want))
		})
	}
}

func TestParseDocuments(t *testing.T) {
	tests := []struct {
		name    string
		content string
		names   []string
		err     string
	}{
		{name: "separator with a comment, empty documents",
			content: "---\n# nothing\n--- # first\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
			names:   []string{"a", "b"}},
		{name: "a separator-like line inside a block scalar",
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  script: |\n    echo one\n    ---\n    echo two\n",
			names:   []string{"a"}},
		{name: "a document that is a list", content: "- a\n- b\n", err: "document 1 is not an object"},
		{name: "a document without kind", content: "apiVersion: v1\nmetadata: {name: a}\n", err: "document 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := parseDocuments("templates/x.yaml", tt.content)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var names []string
			for i, o := range objs {
				names = append(names, o.Object.GetName())
				g.Expect(o.Index).To(Equal(i))
			}
			g.Expect(names).To(Equal(tt.names))
		})
	}
}

func TestBuiltinClusterScoped(t *testing.T) {
	g := NewWithT(t)
	g.Expect(BuiltinClusterScoped(schema.GroupKind{Kind: "Namespace"})).To(BeTrue())
	g.Expect(BuiltinClusterScoped(schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"})).To(BeTrue())
	g.Expect(BuiltinClusterScoped(schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"})).To(BeFalse())
	g.Expect(BuiltinClusterScoped(schema.GroupKind{Group: "example.com", Kind: "Namespace"})).To(BeFalse())
}
