package testenv_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestStartReflux runs the real `reflux manager` against the shared
// environment and reads it the way a benchmark does: metrics, memory and
// processor time from /proc, its log, and a clean stop.
func TestStartReflux(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	r, err := testenv.StartReflux(ctx, env, testenv.RefluxOptions{
		Name: "reflux-test",
		Args: []string{"--concurrent=2"},
	})
	if errors.Is(err, testenv.ErrMissingReflux) {
		t.Skipf("%v (make test builds it first)", err)
	}
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(r.Stop()).To(Succeed()) }()
	g.Expect(r.User.Name).To(Equal(testenv.RefluxUser))

	m, err := r.Metrics(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	requests, ok := m.Sum("rest_client_requests_total")
	g.Expect(ok).To(BeTrue(), "controller-runtime exports client-go's request counter")
	g.Expect(requests).To(BeNumerically(">", 0), "reflux listed and watched to become ready")
	_, ok = m.Sum("no_such_metric_total")
	g.Expect(ok).To(BeFalse())

	rss, err := r.RSS()
	g.Expect(err).NotTo(HaveOccurred())
	peak, err := r.PeakRSS()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rss).To(BeNumerically(">", 1<<20))
	g.Expect(peak).To(BeNumerically(">=", rss))
	cpu, err := r.CPUTime()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cpu).To(BeNumerically(">", 0), "starting a manager takes some processor time")

	g.Expect(r.Stop()).To(Succeed())
	g.Expect(r.Stop()).To(Succeed(), "a second Stop is harmless")
	_, err = r.RSS()
	g.Expect(err).To(HaveOccurred(), "a stopped process has no /proc entry")
	log, err := r.Log()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).To(ContainSubstring("starting manager"))
}

// TestStartRefluxMissingBinary names the make target to run.
func TestStartRefluxMissingBinary(t *testing.T) {
	g := NewWithT(t)
	_, err := testenv.StartReflux(context.Background(), env, testenv.RefluxOptions{Binary: t.TempDir() + "/reflux"})
	g.Expect(err).To(MatchError(testenv.ErrMissingReflux))
	g.Expect(err.Error()).To(ContainSubstring("make build"))
}

// TestStartRefluxPassesArgs shows the caller's flags reach the binary: one
// it does not know makes reflux exit, and StartReflux says so at once
// rather than waiting out the readiness timeout.
func TestStartRefluxPassesArgs(t *testing.T) {
	g := NewWithT(t)
	_, err := testenv.StartReflux(context.Background(), env, testenv.RefluxOptions{
		Name: "reflux-bad-flag",
		Args: []string{"--no-such-flag"},
	})
	if errors.Is(err, testenv.ErrMissingReflux) {
		t.Skipf("%v (make test builds it first)", err)
	}
	g.Expect(err).To(MatchError(ContainSubstring("reflux-bad-flag exited")))
}
