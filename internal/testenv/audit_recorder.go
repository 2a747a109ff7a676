package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

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

// StartAuditRecorder receives e's audit webhook until Close: it listens
// on a loopback port of its own, which e's address forwards to
// (Env.RouteAudit).
func StartAuditRecorder(e *Env) (*AuditRecorder, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for audit events: %w", err)
	}
	if err := e.RouteAudit(l.Addr().String()); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	r := &AuditRecorder{}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
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
