package journey

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
)

// eventSink stands in for notification-controller's event receiver: it
// decodes every POST as the eventv1.Event Flux's controllers send, and
// answers as the receiver does.
type eventSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []eventv1.Event
	bad    []string
}

func startEventSink() *eventSink {
	s := &eventSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the value for reflux's --events-addr.
func (s *eventSink) URL() string { return s.srv.URL + "/" }

// Close stops the receiver.
func (s *eventSink) Close() { s.srv.Close() }

func (s *eventSink) serve(w http.ResponseWriter, r *http.Request) {
	var e eventv1.Event
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if r.Method != http.MethodPost || dec.Decode(&e) != nil {
		s.mu.Lock()
		s.bad = append(s.bad, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// find returns the events received so far that match.
func (s *eventSink) find(match func(eventv1.Event) bool) []eventv1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []eventv1.Event
	for _, e := range s.events {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// rejected lists requests that were not events.
func (s *eventSink) rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bad...)
}
