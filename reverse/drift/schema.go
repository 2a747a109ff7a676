package drift

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
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

	// fetches makes concurrent misses of one group-version share a fetch.
	fetches singleflight.Group

	mu sync.Mutex
	// byGV caches one converter per group-version, with the document URL it
	// was built from (the URL carries the document's hash, so a changed
	// CRD schema gets a new URL).
	byGV map[schema.GroupVersion]cachedTypes
	// missing remembers, per kind, why the documents had no type for it
	// and until when that answer stands (missingRecheck).
	missing map[schema.GroupVersionKind]missingKind
	now     func() time.Time
}

// missingRecheck is how long a kind the documents lack is answered from
// memory: a live object of a kind whose CRD is not served yet (or no
// longer) would otherwise list every document again on each of its
// events (issue 22 §3). A CRD installed meanwhile is found within it.
const missingRecheck = 30 * time.Second

type missingKind struct {
	err   error
	until time.Time
}

type cachedTypes struct {
	url       string
	converter managedfields.TypeConverter
}

// NewOpenAPITypes returns a TypeResolver reading c, typically
// discovery.DiscoveryClient.OpenAPIV3().
func NewOpenAPITypes(c openapi.Client) *OpenAPITypes {
	return &OpenAPITypes{client: c, byGV: map[schema.GroupVersion]cachedTypes{},
		missing: map[schema.GroupVersionKind]missingKind{}, now: time.Now}
}

var _ TypeResolver = &OpenAPITypes{}

// TypeConverter returns the converter of gvk's group-version. A kind the
// cached document lacks (a CRD installed since) refreshes it once; a kind
// still missing then is answered from memory for missingRecheck.
func (o *OpenAPITypes) TypeConverter(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	gv := gvk.GroupVersion()
	o.mu.Lock()
	cached, ok := o.byGV[gv]
	miss, missed := o.missing[gvk]
	o.mu.Unlock()
	if ok && knows(cached.converter, gvk) {
		return cached.converter, nil
	}
	if missed && o.now().Before(miss.until) {
		return nil, miss.err
	}
	// One fetch per group-version at a time, and none under the lock:
	// a slow document for one group must not stall the others' lookups.
	v, err, _ := o.fetches.Do(gv.String(), func() (any, error) { return o.fetch(gv) })
	if err == nil && !knows(v.(cachedTypes).converter, gvk) {
		err = fmt.Errorf("OpenAPI v3 document for %s has no kind %s", gv, gvk.Kind)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.missing[gvk] = missingKind{err: err, until: o.now().Add(missingRecheck)}
		return nil, err
	}
	delete(o.missing, gvk)
	return v.(cachedTypes).converter, nil
}

// fetch reads and caches gv's document, unless the cached one is already
// the document the apiserver serves.
func (o *OpenAPITypes) fetch(gv schema.GroupVersion) (cachedTypes, error) {
	paths, err := o.client.Paths()
	if err != nil {
		return cachedTypes{}, fmt.Errorf("listing OpenAPI v3 documents: %w", err)
	}
	doc, ok := paths[openAPIPath(gv)]
	if !ok {
		return cachedTypes{}, fmt.Errorf("no OpenAPI v3 document for %s", gv)
	}
	o.mu.Lock()
	cached, ok := o.byGV[gv]
	o.mu.Unlock()
	if ok && cached.url == doc.ServerRelativeURL() {
		return cached, nil // unchanged: the kind is not in it
	}
	raw, err := doc.Schema("application/json")
	if err != nil {
		return cachedTypes{}, fmt.Errorf("reading OpenAPI v3 document for %s: %w", gv, err)
	}
	var spec spec3.OpenAPI
	if err := json.Unmarshal(raw, &spec); err != nil {
		return cachedTypes{}, fmt.Errorf("parsing OpenAPI v3 document for %s: %w", gv, err)
	}
	if spec.Components == nil {
		return cachedTypes{}, fmt.Errorf("OpenAPI v3 document for %s has no schemas", gv)
	}
	// preserveUnknownFields is the legacy CRD field, false for every
	// apiextensions.k8s.io/v1 CRD; the apiserver passes the same.
	tc, err := managedfields.NewTypeConverter(spec.Components.Schemas, false)
	if err != nil {
		return cachedTypes{}, fmt.Errorf("building types for %s: %w", gv, err)
	}
	c := cachedTypes{url: doc.ServerRelativeURL(), converter: tc}
	o.mu.Lock()
	o.byGV[gv] = c
	o.mu.Unlock()
	return c, nil
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
