package audit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestBadBatches: each malformed batch is refused with a status the
// apiserver logs and a log line of reflux's own naming the cause, and
// records nothing.
func TestBadBatches(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		status int
		logged string
	}{
		{name: "not JSON", body: "<EventList/>", status: http.StatusBadRequest, logged: "decoding audit EventList"},
		{name: "truncated", body: `{"items":[{"stage":"ResponseComplete"`, status: http.StatusBadRequest, logged: "decoding audit EventList"},
		{name: "wrong shape", body: `{"items":{"stage":1}}`, status: http.StatusBadRequest, logged: "decoding audit EventList"},
		{name: "nested past the JSON decoder's depth", body: `{"items":[{"requestObject":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}]}`, status: http.StatusBadRequest, logged: "exceeded max depth"},
		{name: "over the size bound", body: `{"items":[` + strings.Repeat(`{"stage":"RequestReceived"},`, maxBody/25) + `{}]}`, status: http.StatusRequestEntityTooLarge, logged: "--audit-webhook-batch-max-size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			h := newTestHandler("")
			h.Log = funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{})
			rec := post(h, tc.body, "")
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.status, rec.Body)
			}
			if !strings.Contains(logs.String(), tc.logged) {
				t.Fatalf("log %q does not name the cause %q", logs.String(), tc.logged)
			}
			if h.Store.Len() != 0 {
				t.Fatalf("a refused batch recorded %d objects", h.Store.Len())
			}
		})
	}
}
