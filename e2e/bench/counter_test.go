package bench

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// requestCounter counts the API requests reflux starts. Watch requests are
// left out: each is one long-lived stream per informer, opened at start,
// not work done for a change.
type requestCounter struct {
	total atomic.Int64
	// inFlight and lastActive (unix nanoseconds of the last request's start
	// or end) tell when reflux has gone quiet.
	inFlight   atomic.Int64
	lastActive atomic.Int64

	mu     sync.Mutex
	byKind map[string]kindStats
}

// kindStats are the requests of one kind and their summed round trips.
type kindStats struct {
	n    int64
	took time.Duration
}

func newRequestCounter() *requestCounter {
	return &requestCounter{byKind: map[string]kindStats{}}
}

// wrap is a rest.Config WrapTransport.
func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("watch") == "true" {
			return rt.RoundTrip(r)
		}
		c.total.Add(1)
		c.inFlight.Add(1)
		start := time.Now()
		c.lastActive.Store(start.UnixNano())
		defer func() {
			end := time.Now()
			kind := describeRequest(r)
			c.mu.Lock()
			st := c.byKind[kind]
			c.byKind[kind] = kindStats{n: st.n + 1, took: st.took + end.Sub(start)}
			c.mu.Unlock()
			c.lastActive.Store(end.UnixNano())
			c.inFlight.Add(-1)
		}()
		return rt.RoundTrip(r)
	})
}

// quiet reports whether no request is in flight and none started or ended
// within idle.
func (c *requestCounter) quiet(idle time.Duration) bool {
	return c.inFlight.Load() == 0 && time.Since(time.Unix(0, c.lastActive.Load())) >= idle
}

// snapshot returns the counts so far by kind of request.
func (c *requestCounter) snapshot() map[string]kindStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byKind)
}

// since formats the requests made after the snapshot before: per change,
// and their mean round trip. It is one line, as the testing package cuts
// long benchmark logs short.
func (c *requestCounter) since(before map[string]kindStats, changes int) string {
	now := c.snapshot()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(now)) {
		n, took := now[k].n-before[k].n, now[k].took-before[k].took
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f (%.1fms)", k, float64(n)/float64(changes),
				float64(took)/float64(n)/float64(time.Millisecond)))
		}
	}
	return strings.Join(parts, "; ")
}

// describeRequest names a request by verb and resource, e.g. "PATCH
// configmaps (dry-run apply)" or "PUT drifts/status".
func describeRequest(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/<group>/<version>/...
	rest := parts
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	resource := r.URL.Path
	switch len(rest) {
	case 0:
		resource = strings.Join(parts, "/") // discovery
	case 1, 2:
		resource = rest[0]
	default:
		resource = rest[0] + "/" + rest[2]
	}
	var notes []string
	if r.URL.Query().Get("dryRun") != "" {
		notes = append(notes, "dry-run")
	}
	if strings.Contains(r.Header.Get("Content-Type"), "apply-patch") {
		notes = append(notes, "apply")
	}
	if len(notes) > 0 {
		resource += " (" + strings.Join(notes, " ") + ")"
	}
	return r.Method + " " + resource
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
