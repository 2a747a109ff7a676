package release

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string // kind/name in order
		wantErr  bool
	}{
		{name: "empty manifest", manifest: "", want: []string{}},
		{name: "Helm's source comments and empty documents are skipped",
			manifest: "---\n# Source: app/templates/empty.yaml\n---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n",
			want:     []string{"ConfigMap/a"}},
		{name: "objects keep manifest order",
			manifest: "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
			want:     []string{"Service/s", "Deployment/d", "ConfigMap/c"}},
		{name: "a List is flattened into its items",
			manifest: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: x\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: z\n",
			want:     []string{"ConfigMap/x", "Secret/z"}},
		{name: "a document without a kind is an error, as in helm-controller's diff",
			manifest: "just: data\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", wantErr: true},
		{name: "broken YAML is an error", manifest: "apiVersion: v1\nkind: [ConfigMap\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := Split(tt.manifest)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names(objs)).To(Equal(tt.want))
		})
	}
}

func names(objs []*unstructured.Unstructured) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

// scoper answers from a table of kinds, like the apiserver's RESTMapper,
// and counts its questions.
type scoper struct {
	namespaced map[string]bool
	asked      map[string]int
}

func (s *scoper) IsObjectNamespaced(o runtime.Object) (bool, error) {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	s.asked[kind]++
	ns, ok := s.namespaced[kind]
	if !ok {
		return false, errors.New("no matches for kind " + kind)
	}
	return ns, nil
}

const desiredManifest = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: "1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: elsewhere
  namespace: other
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: unknown
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app.kubernetes.io/managed-by: someone
spec:
  template:
    spec:
      containers:
        - name: app
          image: web:1
          ports:
            - containerPort: 80
status:
  replicas: 3
`

func TestDesired(t *testing.T) {
	g := NewWithT(t)
	s := &scoper{namespaced: map[string]bool{"ConfigMap": true, "Deployment": true, "ClusterRole": false}, asked: map[string]int{}}
	objs, err := Desired(&helmrelease.Release{Name: "rel", Namespace: "apps", Manifest: desiredManifest}, s)

	g.Expect(err).To(MatchError(ContainSubstring("Widget unknown")), "an unknown kind is named")
	g.Expect(names(objs)).To(Equal([]string{"ConfigMap/settings", "ConfigMap/elsewhere", "ClusterRole/reader", "Deployment/web"}),
		"the others are still returned, in manifest order")
	tests := []struct{ name, wantNamespace string }{
		{"ConfigMap/settings", "apps"},   // namespaced, none given: the release's
		{"ConfigMap/elsewhere", "other"}, // the chart's namespace stays
		{"ClusterRole/reader", ""},       // cluster-scoped: none
		{"Deployment/web", "apps"},
	}
	for i, tt := range tests {
		g.Expect(objs[i].GetNamespace()).To(Equal(tt.wantNamespace), tt.name)
		g.Expect(objs[i].GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"), tt.name)
		g.Expect(objs[i].GetAnnotations()).To(And(
			HaveKeyWithValue("meta.helm.sh/release-name", "rel"),
			HaveKeyWithValue("meta.helm.sh/release-namespace", "apps")), tt.name)
	}
	g.Expect(s.asked).To(Equal(map[string]int{"ConfigMap": 1, "ClusterRole": 1, "Widget": 1, "Deployment": 1}),
		"asked once per kind, and not for an object with a namespace")

	// Normalised as helm-controller normalises: status dropped, the
	// port's protocol defaulted (normalize's pod defaults).
	_, found, _ := unstructured.NestedMap(objs[3].Object, "status")
	g.Expect(found).To(BeFalse())
	ports, _, _ := unstructured.NestedSlice(objs[3].Object, "spec", "template", "spec", "containers")
	g.Expect(ports).To(HaveLen(1))
	g.Expect(ports[0]).To(HaveKeyWithValue("ports", ConsistOf(HaveKeyWithValue("protocol", "TCP"))))
}

func TestDesiredWithoutScoper(t *testing.T) {
	g := NewWithT(t)
	objs, err := Desired(&helmrelease.Release{Name: "rel", Namespace: "apps",
		Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: given\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("Scoper")))
	g.Expect(names(objs)).To(Equal([]string{"ConfigMap/a"}), "an object with a namespace needs no Scoper")
	_, err = Desired(nil, nil)
	g.Expect(err).To(HaveOccurred())
}
