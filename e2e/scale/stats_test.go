package scale

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// percentile is the nearest-rank percentile of samples, which it sorts.
func percentile(samples []time.Duration, p int) time.Duration {
	slices.Sort(samples)
	rank := (p*len(samples) + 99) / 100
	return samples[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loadAverage reads the one-minute load average.
func loadAverage() (float64, error) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return 0, fmt.Errorf("empty /proc/loadavg")
	}
	return strconv.ParseFloat(fields[0], 64)
}

// requestsMetric is client-go's request counter, which controller-runtime
// exports for every client the manager builds. It counts each request once,
// watches included (a reflector re-opens its watch every 5 to 10 minutes).
const requestsMetric = "rest_client_requests_total"

// requests is reflux's request count so far, summed over its labels.
func requests(ctx context.Context, r *testenv.RefluxProcess) (float64, error) {
	m, err := r.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	n, ok := m.Sum(requestsMetric)
	if !ok {
		return 0, fmt.Errorf("reflux does not export %s", requestsMetric)
	}
	return n, nil
}

// quietFor is how long reflux's request count must stand still for it to
// count as quiet.
const quietFor = 5 * time.Second

// waitQuiet waits, up to timeout, until reflux has made no API request for
// quietFor, and returns its request count then. quiet is false when the
// timeout passed first; the count is then the latest.
func waitQuiet(ctx context.Context, r *testenv.RefluxProcess, timeout time.Duration) (count float64, quiet bool, err error) {
	last, since := -1.0, time.Now()
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := requests(ctx, r)
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
