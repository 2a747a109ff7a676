package testenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// env is shared by every test in the package: starting kube-apiserver and
// both controllers takes seconds, and the tests use distinct objects.
var (
	env   *testenv.Env
	audit *auditRecorder
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(context.Background(), testenv.Options{AuditWebhook: &testenv.AuditWebhook{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	audit, err = startAuditRecorder(env.AuditWebhookAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer audit.srv.Close() //nolint:errcheck // test teardown
	code := m.Run()
	if code != 0 {
		if err := env.DumpLogs(os.Stdout, 256<<10); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}

// auditRecorder keeps every audit event kube-apiserver posts.
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

// find returns the events that match.
func (r *auditRecorder) find(match func(auditv1.Event) bool) []auditv1.Event {
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
