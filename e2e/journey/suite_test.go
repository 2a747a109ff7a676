package journey

import (
	"context"
	"testing"
	"time"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// shardKey labels the fixtures whose reflux a test starts and kills
	// itself; the suite's reflux governs everything without it.
	shardKey = "reflux.dev/journey-shard"
	// aliceName is the on-call engineer, in testenv's break-glass group
	// rather than system:masters: only the harness's admin client is.
	aliceName = "alice@example.com"

	// resyncSource and resyncKustomization make Flux poll the repository
	// and reconcile every few seconds, for journeys through a merge;
	// otherwise only the test's own reconciles run Flux.
	resyncSource        = 2 * time.Second
	resyncKustomization = 3 * time.Second
)

var (
	env   *testenv.Env
	alice fixture.Person
	// suiteReflux is the suite's reflux: the real binary as config/default's
	// ServiceAccount, its events sent to sink.
	suiteReflux *testenv.RefluxProcess
	sink        *eventSink
)

func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{AuditWebhook: &testenv.AuditWebhook{}}})
}

// setup provisions alice and starts the suite's reflux, which installs
// config/default first.
func setup(ctx context.Context, env *testenv.Env) error {
	sink = startEventSink()
	fixture.Defer(func() error { sink.Close(); return nil })
	var err error
	if alice, err = fixture.OnCall(ctx, env, aliceName); err != nil {
		return err
	}
	suiteReflux, err = fixture.StartSuiteReflux(ctx, env, fixture.Options{Selector: "!" + shardKey,
		AuditWebhook: true, Args: []string{"--events-addr=" + sink.URL()}})
	return err
}
