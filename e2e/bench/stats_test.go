package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// percentile is the nearest-rank percentile of samples. It sorts a copy:
// callers keep their samples in the order they were taken.
func percentile(samples []time.Duration, p int) time.Duration {
	s := slices.Sorted(slices.Values(samples))
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(n int64) float64        { return float64(n) / (1 << 20) }

// loadOrNaN is the one-minute load average, or NaN when /proc/loadavg
// is unreadable.
func loadOrNaN() float64 { return fixture.LoadAverage() }

// requestsMetric is client-go's request counter, which controller-runtime
// exports for every client a manager builds: reflux's and
// kustomize-controller's alike. It counts each request once, watches
// included (a reflector re-opens its watch every 5 to 10 minutes).
const requestsMetric = "rest_client_requests_total"

// requests is p's request count so far, summed over its labels.
func requests(ctx context.Context, p *testenv.Process) (float64, error) {
	m, err := p.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	n, ok := m.Sum(requestsMetric)
	if !ok {
		return 0, fmt.Errorf("%s does not export %s", p.Name, requestsMetric)
	}
	return n, nil
}

// quietFor is how long a process's request count must stand still for it
// to count as quiet.
const quietFor = 5 * time.Second

// waitQuiet waits, up to timeout, until p has made no API request for
// quietFor, and returns its request count then. quiet is false when the
// timeout passed first; the count is then the latest.
func waitQuiet(ctx context.Context, p *testenv.Process, timeout time.Duration) (count float64, quiet bool, err error) {
	last, since := -1.0, time.Now()
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := requests(ctx, p)
		if err != nil {
			return false, err
		}
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quietFor, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return last, false, nil
	}
	return last, err == nil, err
}

// TestPercentile pins the nearest-rank percentile, and that it leaves the
// samples as they were: the figures read them again in order.
func TestPercentile(t *testing.T) {
	g := NewWithT(t)
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	taken := slices.Clone(samples)
	g.Expect(percentile(samples, 50)).To(Equal(50 * time.Millisecond))
	g.Expect(percentile(samples, 99)).To(Equal(99 * time.Millisecond))
	g.Expect(percentile(samples, 100)).To(Equal(100 * time.Millisecond))
	g.Expect(percentile(samples[:1], 99)).To(Equal(100 * time.Millisecond))
	g.Expect(percentile([]time.Duration{3, 1, 2}, 0)).To(Equal(time.Duration(1)))
	g.Expect(samples).To(Equal(taken), "percentile sorted its input")
	g.Expect(mean([]time.Duration{time.Second, 3 * time.Second})).To(Equal(2 * time.Second))
}
