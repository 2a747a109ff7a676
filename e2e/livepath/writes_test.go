package livepath

import (
	"net/http"
	"strings"
	"sync"
)

// writeLog records the writes one reflux sends to the apiserver: method
// and path of every request that is not a read.
type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			w.mu.Lock()
			w.writes = append(w.writes, req.Method+" "+req.URL.Path)
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// in returns the writes to paths in namespace ns.
func (w *writeLog) in(ns string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, wr := range w.writes {
		if strings.Contains(wr, "/namespaces/"+ns+"/") {
			out = append(out, wr)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
