package drift

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
)

// TypeResolver gives the structured-merge-diff type of a kind, as the
// apiserver knows it: the in-process comparison merges with it exactly as
// the apiserver's field manager does.
type TypeResolver interface {
	TypeConverter(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error)
}

// OpenAPITypes resolves types from the cluster's OpenAPI v3 documents, one
// group-version at a time, the way the apiserver's own admission type
// converter does. Reading them needs only the `get` that every
// authenticated user has on /openapi/v3 (system:discovery), never `patch`.
// It is safe for concurrent use.
type OpenAPITypes struct {
	client openapi.Client

	mu sync.Mutex
	// byGV caches one converter per group-version, with the document URL it
	// was built from (the URL carries the document's hash, so a changed
	// CRD schema gets a new URL).
	byGV map[schema.GroupVersion]cachedTypes
}

type cachedTypes struct {
	url       string
	converter managedfields.TypeConverter
}

// NewOpenAPITypes returns a TypeResolver reading c, typically
// discovery.DiscoveryClient.OpenAPIV3().
func NewOpenAPITypes(c openapi.Client) *OpenAPITypes {
	return &OpenAPITypes{client: c, byGV: map[schema.GroupVersion]cachedTypes{}}
}

var _ TypeResolver = &OpenAPITypes{}

// TypeConverter returns the converter of gvk's group-version. A kind the
// cached document lacks (a CRD installed since) refreshes it once.
func (o *OpenAPITypes) TypeConverter(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	gv := gvk.GroupVersion()
	if c, ok := o.byGV[gv]; ok && knows(c.converter, gvk) {
		return c.converter, nil
	}
	paths, err := o.client.Paths()
	if err != nil {
		return nil, fmt.Errorf("listing OpenAPI v3 documents: %w", err)
	}
	doc, ok := paths[openAPIPath(gv)]
	if !ok {
		return nil, fmt.Errorf("no OpenAPI v3 document for %s", gv)
	}
	if c, ok := o.byGV[gv]; ok && c.url == doc.ServerRelativeURL() {
		return nil, fmt.Errorf("OpenAPI v3 document for %s has no kind %s", gv, gvk.Kind)
	}
	raw, err := doc.Schema("application/json")
	if err != nil {
		return nil, fmt.Errorf("reading OpenAPI v3 document for %s: %w", gv, err)
	}
	var spec spec3.OpenAPI
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("parsing OpenAPI v3 document for %s: %w", gv, err)
	}
	if spec.Components == nil {
		return nil, fmt.Errorf("OpenAPI v3 document for %s has no schemas", gv)
	}
	// preserveUnknownFields is the legacy CRD field, false for every
	// apiextensions.k8s.io/v1 CRD; the apiserver passes the same.
	tc, err := managedfields.NewTypeConverter(spec.Components.Schemas, false)
	if err != nil {
		return nil, fmt.Errorf("building types for %s: %w", gv, err)
	}
	o.byGV[gv] = cachedTypes{url: doc.ServerRelativeURL(), converter: tc}
	if !knows(tc, gvk) {
		return nil, fmt.Errorf("OpenAPI v3 document for %s has no kind %s", gv, gvk.Kind)
	}
	return tc, nil
}

// openAPIPath is the key /openapi/v3 lists a group-version under.
func openAPIPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// knows reports whether tc has a type for gvk.
func knows(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	_, err := tc.ObjectToTyped(u)
	return err == nil
}
