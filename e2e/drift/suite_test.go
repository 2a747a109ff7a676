package drift

import (
	"context"
	"testing"
	"time"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const userName = "alice@example.com"

var (
	env   *testenv.Env
	alice fixture.Person
	// shop is governed by a report-only policy that holds by default;
	// payments by one that signs and writes branches.
	shop, payments *fixture.App
	// current is the running reflux.
	current *testenv.RefluxProcess
)

func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{AuditWebhook: &testenv.AuditWebhook{}}})
}

// setup provisions alice, pushes the shop and the payments app, lets Flux
// apply them, and starts reflux with the apiserver's audit webhook
// pointed at it.
func setup(ctx context.Context, env *testenv.Env) error {
	var err error
	if alice, err = fixture.OnCall(ctx, env, userName); err != nil {
		return err
	}
	shop, err = fixture.CreateApp(ctx, env, "shop", fixture.AppOptions{Dir: "testdata/shop",
		Paths:  map[string]string{"shop": "./overlays/prod"},
		Labels: map[string]string{"reflux.dev/tier": "apps"}, Policy: shopPolicy,
		// Only forced reconciles run during the tests.
		Interval: 10 * time.Minute, Unwatched: true})
	if err != nil {
		return err
	}
	payments, err = fixture.CreateApp(ctx, env, "payments", fixture.AppOptions{Dir: "testdata/wb",
		Paths: map[string]string{"payments": "./base"}, Signed: true,
		// Short intervals drive reflux's resync, which checks its branches.
		SourceInterval: 2 * time.Second, Interval: 3 * time.Second, Unwatched: true})
	if err != nil {
		return err
	}
	current, err = startReflux(ctx, "reflux")
	return err
}

// shopPolicy governs every Kustomization of tier apps, the shop's and
// the broken one TestNotReadyKustomizationGetsAClearConditionAndNoDrift
// adds, and leaves one field unheld.
func shopPolicy(p *refluxv1.ReverseSyncPolicy) {
	noHold := false
	p.Name = "apps"
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/tier": "apps"}
	p.Spec.Git.ReportOnly = true
	p.Spec.Rules = []refluxv1.Rule{{
		Name: "audit-settings-unheld", Kinds: []string{"ConfigMap"}, Fields: []string{"/data/RETENTION_DAYS"},
		Action: refluxv1.AlertAction, Severity: refluxv1.SeverityMedium, Hold: &noHold,
	}}
}

// startReflux starts the suite's reflux, receiving the audit webhook.
func startReflux(ctx context.Context, name string) (*testenv.RefluxProcess, error) {
	return fixture.StartSuiteReflux(ctx, env, fixture.Options{Name: name, AuditWebhook: true})
}
