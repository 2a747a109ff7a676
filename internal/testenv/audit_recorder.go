package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// AuditRecorder keeps every audit event kube-apiserver posts to the
// audit webhook (Options.AuditWebhook, at Env.AuditWebhookAddr). Tests
// read from it who made each write and whom it impersonated, which a
// watch event does not say.
type AuditRecorder struct {
	srv    *http.Server
	mu     sync.Mutex
	events []auditv1.Event
}

// StartAuditRecorder serves the audit webhook on addr until Close.
func StartAuditRecorder(addr string) (*AuditRecorder, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for audit events on %s: %w", addr, err)
	}
	r := &AuditRecorder{}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve)}
	go r.srv.Serve(l) //nolint:errcheck // ends with Close
	return r, nil
}

func (r *AuditRecorder) serve(w http.ResponseWriter, req *http.Request) {
	var list auditv1.EventList
	if err := json.NewDecoder(req.Body).Decode(&list); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.events = append(r.events, list.Items...)
	r.mu.Unlock()
}

// Find returns the events that match, in the order they arrived.
func (r *AuditRecorder) Find(match func(auditv1.Event) bool) []auditv1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []auditv1.Event
	for _, e := range r.events {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// WritesOf returns the completed requests made to one object.
func (r *AuditRecorder) WritesOf(namespace, name string) []auditv1.Event {
	return r.Find(func(e auditv1.Event) bool {
		return e.Stage == auditv1.StageResponseComplete && e.ObjectRef != nil &&
			e.ObjectRef.Namespace == namespace && e.ObjectRef.Name == name
	})
}

// Close stops serving.
func (r *AuditRecorder) Close() error { return r.srv.Close() }
