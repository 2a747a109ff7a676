package soak

import (
	"testing"
	"time"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

var env *testenv.Env

// TestMain starts the environment at the soak's first need of it: the
// soak is skipped outside -race and `make soak`, and starts nothing then.
// kube-apiserver sends its audit events to the replicas (auditFanout).
func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Lazy: true, Env: testenv.Options{AuditWebhook: &testenv.AuditWebhook{},
		// Flux applies hundreds of objects per Kustomization in the full
		// soak, on a machine the soak keeps busy.
		WaitTimeout: 5 * time.Minute}})
}
