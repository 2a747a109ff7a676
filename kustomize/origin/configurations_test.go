package origin

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestSetConfiguredNamespaces: the namespace transformer's other field
// specs set the namespace where their kind matches, cross lists, create
// a missing field only when the spec says so, and rename a Namespace.
func TestSetConfiguredNamespaces(t *testing.T) {
	tests := []struct {
		name, doc string
		specs     []fieldSpec
		path      []string
		want      string // "" when the field must stay absent
	}{
		{
			name: "a Namespace takes the namespace as its name",
			doc:  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: system\n",
			path: []string{"metadata", "name"}, want: "prod",
		},
		{
			name: "an APIService's service is created in it",
			doc:  "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1.metrics\nspec:\n  service:\n    name: metrics\n",
			path: []string{"spec", "service", "namespace"}, want: "prod",
		},
		{
			name: "a CRD without a conversion webhook gets none",
			doc:  "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n",
			path: []string{"spec", "conversion"},
		},
		{
			name:  "a configured path crosses a list",
			doc:   "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: v\nwebhooks:\n- name: a\n  clientConfig:\n    service:\n      name: svc\n      namespace: system\n",
			specs: []fieldSpec{{group: "admissionregistration.k8s.io", kind: "ValidatingWebhookConfiguration", path: "webhooks/clientConfig/service/namespace"}},
			path:  []string{"webhooks", "0", "clientConfig", "service", "namespace"}, want: "prod",
		},
		{
			name:  "a configured path for another kind leaves it alone",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  ns: system\n",
			specs: []fieldSpec{{kind: "Secret", path: "data/ns"}},
			path:  []string{"data", "ns"}, want: "system",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, err := parseDocs([]byte(tt.doc))
			g.Expect(err).NotTo(HaveOccurred())
			n, err := fromYAML(docs[0], "r.yaml", KindResource, "", identityPos)
			g.Expect(err).NotTo(HaveOccurred())
			o := newObject(n)
			e := &entry{value: "prod", layer: Layer{File: "kustomization.yaml", Line: 1, Column: 12, Kind: KindNamespace}}
			setConfiguredNamespaces([]*object{o}, append(builtinNamespaceSpecs, tt.specs...), e)
			leaf := o.root
			for _, p := range tt.path {
				if leaf != nil && leaf.kind == seqNode {
					leaf = leaf.items[0]
					continue
				}
				leaf = leaf.get(p)
			}
			if tt.want == "" {
				g.Expect(leaf).To(BeNil())
				return
			}
			g.Expect(leaf).NotTo(BeNil())
			g.Expect(leaf.value).To(Equal(tt.want))
		})
	}
}
