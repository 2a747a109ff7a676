package tenancy

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditRecorder keeps the audit events kube-apiserver posts: they name the
// user each write was made by and whom it impersonated, which is how the
// tests see reflux act as the tenant.
type auditRecorder struct {
	srv    *http.Server
	mu     sync.Mutex
	events []auditv1.Event
}

func startAuditRecorder(addr string) (*auditRecorder, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for audit events on %s: %w", addr, err)
	}
	r := &auditRecorder{}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve)}
	go r.srv.Serve(l) //nolint:errcheck // ends with Close at teardown
	return r, nil
}

func (r *auditRecorder) serve(w http.ResponseWriter, req *http.Request) {
	var list auditv1.EventList
	if err := json.NewDecoder(req.Body).Decode(&list); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.events = append(r.events, list.Items...)
	r.mu.Unlock()
}

// writesOf returns the completed writes of one object.
func (r *auditRecorder) writesOf(ns, name string) []auditv1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []auditv1.Event
	for _, e := range r.events {
		if e.Stage == auditv1.StageResponseComplete && e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name {
			out = append(out, e)
		}
	}
	return out
}
