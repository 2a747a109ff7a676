package testenv

import (
	"context"
	"strings"
	"testing"
)

// Option adjusts the Options New starts with.
type Option func(*Options)

// WithOptions replaces the options wholesale; later Options still apply.
func WithOptions(o Options) Option {
	return func(opts *Options) { *opts = o }
}

// WithAuditWebhook makes kube-apiserver send audit events as a describes.
func WithAuditWebhook(a AuditWebhook) Option {
	return func(opts *Options) { opts.AuditWebhook = &a }
}

// WithoutFlux starts only the control plane and the git server.
func WithoutFlux() Option {
	return func(opts *Options) { opts.WithoutFlux = true }
}

// WithHelm starts helm-controller too (Options.Helm).
func WithHelm() Option {
	return func(opts *Options) { opts.Helm = true }
}

// WithEventsAddr points every controller's --events-addr at addr.
func WithEventsAddr(addr string) Option {
	return func(opts *Options) { opts.EventsAddr = addr }
}

// logTail bounds each log New prints on failure: the controllers log at
// debug level and a whole log would bury the test's own output.
const logTail = 256 << 10

// New starts an environment for one test and stops it in t.Cleanup. When
// the test has failed by then, it first prints every component's log, so
// a red CI run explains itself.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	e, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("starting test environment: %v", err)
	}
	t.Logf("test environment: %s", e.Kubernetes)
	t.Cleanup(func() {
		if t.Failed() {
			var b strings.Builder
			if err := e.DumpLogs(&b, logTail); err != nil {
				t.Errorf("dumping logs: %v", err)
			}
			t.Log("test environment logs:\n" + b.String())
		}
		if err := e.Stop(); err != nil {
			t.Errorf("stopping test environment: %v", err)
		}
	})
	return e
}
