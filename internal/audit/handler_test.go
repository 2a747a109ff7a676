package audit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
)

const batch = `{
  "kind": "EventList", "apiVersion": "audit.k8s.io/v1",
  "items": [
    {"level": "Metadata", "auditID": "1", "stage": "ResponseComplete", "verb": "patch",
     "requestURI": "/apis/apps/v1/namespaces/apps/deployments/web?fieldManager=kubectl-edit",
     "user": {"username": "alice@example.com", "groups": ["sre"]},
     "userAgent": "kubectl/v1.32.0",
     "objectRef": {"resource": "deployments", "namespace": "apps", "name": "web", "apiGroup": "apps", "apiVersion": "v1"},
     "responseStatus": {"code": 200},
     "stageTimestamp": "2026-11-29T10:00:05.000000Z"},
    {"level": "Metadata", "auditID": "2", "stage": "ResponseComplete", "verb": "patch",
     "requestURI": "/apis/apps/v1/namespaces/apps/deployments/web?dryRun=All&fieldManager=kustomize-controller",
     "user": {"username": "system:serviceaccount:flux-system:kustomize-controller"},
     "objectRef": {"resource": "deployments", "namespace": "apps", "name": "web", "apiGroup": "apps", "apiVersion": "v1"},
     "responseStatus": {"code": 200},
     "stageTimestamp": "2026-11-29T10:00:06.000000Z"},
    {"level": "Metadata", "auditID": "3", "stage": "ResponseStarted", "verb": "update",
     "requestURI": "/api/v1/namespaces/apps/configmaps/flags",
     "user": {"username": "mallory"},
     "objectRef": {"resource": "configmaps", "namespace": "apps", "name": "flags", "apiVersion": "v1"},
     "stageTimestamp": "2026-11-29T10:00:07.000000Z"},
    {"level": "Metadata", "auditID": "4", "stage": "ResponseComplete", "verb": "update",
     "requestURI": "/api/v1/namespaces/apps/configmaps/flags",
     "user": {"username": "denied"},
     "objectRef": {"resource": "configmaps", "namespace": "apps", "name": "flags", "apiVersion": "v1"},
     "responseStatus": {"code": 403},
     "stageTimestamp": "2026-11-29T10:00:08.000000Z"},
    {"level": "Metadata", "auditID": "5", "stage": "ResponseComplete", "verb": "update",
     "requestURI": "/api/v1/namespaces/apps/configmaps/flags?fieldManager=kubectl-edit",
     "user": {"username": "system:serviceaccount:ci:deployer"},
     "impersonatedUser": {"username": "bob@example.com"},
     "objectRef": {"resource": "configmaps", "namespace": "apps", "name": "flags", "apiVersion": "v1"},
     "responseStatus": {"code": 200},
     "stageTimestamp": "2026-11-29T10:00:09.000000Z"},
    {"level": "Metadata", "auditID": "6", "stage": "ResponseComplete", "verb": "get",
     "requestURI": "/api/v1/namespaces/apps/configmaps/flags",
     "user": {"username": "reader"},
     "objectRef": {"resource": "configmaps", "namespace": "apps", "name": "flags", "apiVersion": "v1"},
     "responseStatus": {"code": 200},
     "stageTimestamp": "2026-11-29T10:00:10.000000Z"}
  ]
}`

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func newTestHandler(token string) *Handler {
	return &Handler{Store: newTestStore(), Token: token, Log: logr.Discard()}
}

// newTestStore is a store whose clock stands just after batch's writes.
func newTestStore() *Store {
	return NewStore(WithClock(func() time.Time { return at("2026-11-29T10:01:00Z") }))
}

func post(h http.Handler, body, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/audit", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerRecordsSuccessfulWrites(t *testing.T) {
	g := NewWithT(t)
	h := newTestHandler("")
	g.Expect(post(h, batch, "").Code).To(Equal(http.StatusOK))

	deploy := ObjectKey{APIGroup: "apps", Resource: "deployments", Namespace: "apps", Name: "web"}
	w, ok := h.Store.Lookup(deploy, "kubectl-edit", at("2026-11-29T10:00:30Z"))
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice@example.com"))
	g.Expect(w.Groups).To(ConsistOf("sre"))
	g.Expect(w.FieldManager).To(Equal("kubectl-edit"))
	g.Expect(w.Verb).To(Equal("patch"))

	// The dry run by kustomize-controller is not a write.
	w, ok = h.Store.Lookup(deploy, "", at("2026-11-29T10:00:30Z"))
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice@example.com"))

	// Only the completed, successful write counts, and impersonation names
	// the impersonated user.
	cm := ObjectKey{Resource: "configmaps", Namespace: "apps", Name: "flags"}
	w, ok = h.Store.Lookup(cm, "", at("2026-11-29T10:00:30Z"))
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("bob@example.com"))
	g.Expect(w.Impersonator).To(Equal("system:serviceaccount:ci:deployer"), "who acted as bob")
	deploy2, _ := h.Store.Lookup(deploy, "kubectl-edit", at("2026-11-29T10:00:30Z"))
	g.Expect(deploy2.Impersonator).To(BeEmpty(), "alice acted as herself")

	// Writes after the moment asked about are not attributed to it.
	_, ok = h.Store.Lookup(cm, "", at("2026-11-29T10:00:07Z"))
	g.Expect(ok).To(BeFalse())

	// A different field manager is not this change's author.
	_, ok = h.Store.Lookup(deploy, "kubectl-set", at("2026-11-29T10:00:30Z"))
	g.Expect(ok).To(BeFalse())
}

func TestHandlerRejects(t *testing.T) {
	g := NewWithT(t)
	h := newTestHandler("s3cret")
	g.Expect(post(h, batch, "").Code).To(Equal(http.StatusUnauthorized))
	g.Expect(post(h, batch, "wrong").Code).To(Equal(http.StatusUnauthorized))
	g.Expect(h.Store.Len()).To(Equal(0))
	g.Expect(post(h, "{not json", "s3cret").Code).To(Equal(http.StatusBadRequest))
	g.Expect(post(h, batch, "s3cret").Code).To(Equal(http.StatusOK))
	g.Expect(h.Store.Len()).To(Equal(2))

	req := httptest.NewRequest(http.MethodGet, "/audit", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusMethodNotAllowed))
}

func TestStoreBoundsAndExpiry(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithPerObject(3), WithTTL(time.Minute), WithClock(func() time.Time { return now }))
	key := ObjectKey{Resource: "configmaps", Namespace: "a", Name: "b"}
	for i := 0; i < 5; i++ {
		s.Record(key, Write{User: string(rune('a' + i)), Time: now.Add(time.Duration(i) * time.Second)})
	}
	w, ok := s.Lookup(key, "", now.Add(time.Hour))
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("e"))
	// Only the last three are kept.
	_, ok = s.Lookup(key, "", now.Add(1*time.Second-time.Second-time.Millisecond))
	g.Expect(ok).To(BeFalse())

	now = now.Add(2 * time.Minute)
	s.Record(ObjectKey{Name: "other"}, Write{User: "z", Time: now})
	g.Expect(s.Len()).To(Equal(1), "expired writes are dropped")
}

func TestLookupDelete(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithClock(func() time.Time { return now }))
	key := ObjectKey{Resource: "configmaps", Namespace: "a", Name: "b"}
	s.Record(key, Write{User: "bob", Verb: "patch", Time: now.Add(-time.Minute)})
	s.Record(key, Write{User: "alice", Verb: "delete", Time: now})
	s.Record(key, Write{User: "flux", Verb: "create", Time: now.Add(2 * time.Second)})

	w, ok := s.LookupDelete(key, now.Add(300*time.Millisecond))
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice"), "the deletion, not the later create or the earlier patch")
	_, ok = s.LookupDelete(key, now.Add(-2*time.Second))
	g.Expect(ok).To(BeFalse(), "a deletion after the watch saw it is another one")
	_, ok = s.LookupDelete(key, now.Add(time.Minute))
	g.Expect(ok).To(BeFalse(), "a deletion long before is not the one the watch saw")
	_, ok = s.LookupDelete(ObjectKey{Resource: "configmaps", Namespace: "a", Name: "c"}, now)
	g.Expect(ok).To(BeFalse())
}

func FuzzIngest(f *testing.F) {
	f.Add([]byte(batch))
	f.Add([]byte(`{"items":[{"stage":"ResponseComplete","verb":"patch","objectRef":{}}]}`))
	f.Add([]byte(`{"items":[{"stage":"ResponseComplete","verb":"patch","objectRef":{"name":"a"},"stageTimestamp":"2026-11-29T10:00:59Z"}]}`))
	f.Add([]byte(`{"items":[{"stage":"ResponseComplete","verb":"update","requestURI":"%zz","objectRef":{"name":"x"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := newTestHandler("")
		writes, err := decode(body)
		if err != nil && len(writes) != 0 {
			t.Fatalf("decoded %d writes from a batch that failed to decode", len(writes))
		}
		h.record(writes, []*Store{h.Store})
		n := len(writes)
		if h.Store.Len() > n {
			t.Fatalf("store holds %d objects after recording %d writes", h.Store.Len(), n)
		}
		for key, list := range h.Store.writes {
			for _, w := range list {
				if key.Name == "" || w.Time.IsZero() {
					t.Fatalf("recorded an unmatchable write %+v for %+v", w, key)
				}
			}
		}
	})
}

func TestNotifySeesEveryRecordedWrite(t *testing.T) {
	g := NewWithT(t)
	s := NewStore()
	var got []ObjectKey
	s.Notify(func(k ObjectKey, w Write) {
		// Called outside the store's lock: looking the write up works.
		_, ok := s.Lookup(k, w.FieldManager, w.Time)
		g.Expect(ok).To(BeTrue())
		got = append(got, k)
	})
	secret := ObjectKey{Resource: "secrets", Namespace: "payments", Name: "payments-api"}
	cm := ObjectKey{Resource: "configmaps", Namespace: "payments", Name: "flags"}
	now := time.Now()
	s.Record(secret, Write{User: "alice@example.com", FieldManager: "kubectl-patch", Verb: "patch", Time: now})
	s.Record(cm, Write{User: "bob@example.com", Verb: "update", Time: now})
	g.Expect(got).To(Equal([]ObjectKey{secret, cm}))
}

// TestASlowWriteMatchesItsManagedFieldsTime: a loaded apiserver received
// alice's patch at 10:00:05.8, set the object's managedFields time then
// (10:00:05, at one-second resolution), and completed it at 10:00:08.5.
// The change is matched by when the request began: by its completion
// alone it would look three seconds too late, and its author would never
// be named (the demo, on a loaded CI machine).
func TestASlowWriteMatchesItsManagedFieldsTime(t *testing.T) {
	g := NewWithT(t)
	h := newTestHandler("")
	slow := `{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": [
    {"level": "Metadata", "auditID": "1", "stage": "ResponseComplete", "verb": "patch",
     "requestURI": "/apis/apps/v1/namespaces/apps/deployments/web?fieldManager=kubectl-edit",
     "user": {"username": "alice@example.com"},
     "objectRef": {"resource": "deployments", "namespace": "apps", "name": "web", "apiGroup": "apps", "apiVersion": "v1"},
     "responseStatus": {"code": 200},
     "requestReceivedTimestamp": "2026-11-29T10:00:05.800000Z",
     "stageTimestamp": "2026-11-29T10:00:08.500000Z"}]}`
	g.Expect(post(h, slow, "").Code).To(Equal(http.StatusOK))
	deploy := ObjectKey{APIGroup: "apps", Resource: "deployments", Namespace: "apps", Name: "web"}
	managedFieldsTime := at("2026-11-29T10:00:05Z")

	w, ok := h.Store.Lookup(deploy, "kubectl-edit", managedFieldsTime)
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice@example.com"))
	w, ok = h.Store.Latest(deploy, managedFieldsTime, func(Write) bool { return true })
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice@example.com"))

	// A write whose request began after the change is still not its author.
	_, ok = h.Store.Lookup(deploy, "kubectl-edit", at("2026-11-29T10:00:03Z"))
	g.Expect(ok).To(BeFalse())
}
