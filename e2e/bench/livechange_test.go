package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// minChanges is the fewest measured changes per run, so that p99 is
	// not the maximum of a handful even at -benchtime 1x.
	minChanges = 200
	// warmupChanges run first, unmeasured: the first drift of each
	// Kustomization fills reflux's caches and connection pool.
	warmupChanges = 20 // one per Kustomization of the fleet
	// changeTimeout bounds one change, and settling after it; no
	// wall-clock target is asserted.
	changeTimeout = time.Minute
	// changeQuiet is how long reflux must make no API request before the next
	// edit, so that each change's requests, including the follow-up work
	// the edit causes (status reports, events), are counted for it alone
	// and do not compete with the next change.
	changeQuiet = 500 * time.Millisecond
)

// sample is one measured change: its latency until both the hold and the
// record were seen, each of those alone, and reflux's requests.
type sample struct {
	target             target
	latency, hold, rec time.Duration
	requests           int64
}

// BenchmarkLiveChange edits max(b.N, 200) random live objects of the fleet
// one after another, each as `kubectl edit` would (an Update under field
// manager kubectl-edit) to a value never seen before, and measures from
// the moment the edit is sent until the benchmark's own watches have seen
// both the hold on the object and its Drift record written as Held. Before
// the next edit it waits until reflux has made no API request for 500ms.
//
// Every edited object is one reflux does not hold yet, so every change is
// a new drift that needs both a hold and a record: one run can measure at
// most 1,000 - 20 changes, and repeated runs (-count) share the fleet.
//
// Its metrics are per change, not per b.N iteration: p50-ms, p99-ms and
// max-ms of that latency; requests/change, the API requests the reflux
// binary made for one change (watch streams excluded), as the fixture's
// proxy in front of the apiserver sees them, with the fewest and most any
// one change took; load-avg, the machine's one-minute load average at the
// end, since these machines are shared. With -benchmem, B/op and
// allocs/op are the benchmark process's allocations per change (its
// watches and the proxy), not reflux's.
func BenchmarkLiveChange(b *testing.B) {
	ctx := context.Background()
	env := fixture.Shared(b)
	targets := pickTargets(ctx, b, warmupChanges+max(b.N, minChanges))
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i, t := range targets[:warmupChanges] {
		measure(ctx, b, env, t, fmt.Sprintf("warmup-%s-%d", run, i))
	}
	targets = targets[warmupChanges:]

	samples := make([]sample, 0, len(targets))
	before := fleetRequests.snapshot()
	var mem0, mem1 runtime.MemStats
	runtime.ReadMemStats(&mem0)
	b.ResetTimer()
	for i, t := range targets {
		samples = append(samples, measure(ctx, b, env, t, fmt.Sprintf("live-%s-%d", run, i)))
	}
	b.StopTimer()
	runtime.ReadMemStats(&mem1)
	b.Logf("%d changes; reflux's requests per change by kind (mean round trip): %s",
		len(samples), fleetRequests.since(before, len(samples)))
	report(b, samples)
	n := float64(len(samples))
	b.ReportMetric(float64(mem1.TotalAlloc-mem0.TotalAlloc)/n, "B/op")
	b.ReportMetric(float64(mem1.Mallocs-mem0.Mallocs)/n, "allocs/op")
}

// pickTargets returns n random objects of the fleet that reflux does not
// hold yet.
func pickTargets(ctx context.Context, b *testing.B, n int) []target {
	fresh, err := fleetWatch.unheld(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if n > len(fresh) {
		b.Fatalf("%d changes asked for, but only %d objects are not held yet", n, len(fresh))
	}
	slices.SortFunc(fresh, func(x, y target) int { return strings.Compare(x.String(), y.String()) })
	rand.New(rand.NewPCG(4, 1000)).Shuffle(len(fresh), func(i, j int) { fresh[i], fresh[j] = fresh[j], fresh[i] })
	return fresh[:n]
}

// measure edits t and returns the latency until the hold and the record
// are seen, and the requests reflux made until it went quiet again.
func measure(ctx context.Context, b *testing.B, env *testenv.Env, t target, value string) sample {
	b.Helper()
	start := fleetRequests.total.Load()
	s := change(ctx, b, env, t, value)
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, changeTimeout, true, func(context.Context) (bool, error) {
		return fleetRequests.quiet(changeQuiet), nil
	})
	if err != nil {
		b.Fatalf("%s: reflux still making requests %s after the change: %v", t, changeTimeout, err)
	}
	s.requests = fleetRequests.total.Load() - start
	return s
}

// change changes one value of t to value and waits until reflux has held
// the object and recorded the drift. It returns the latencies.
func change(ctx context.Context, b *testing.B, env *testenv.Env, t target, value string) sample {
	b.Helper()
	obj, err := liveCopy(ctx, t)
	if err != nil {
		b.Fatal(err)
	}
	setValue(obj, value)
	c := fleetWatch.expect(t, value)
	sent := time.Now()
	if err := env.Client.Update(ctx, obj, client.FieldOwner("kubectl-edit")); err != nil {
		b.Fatalf("editing %s: %v", t, err)
	}
	select {
	case <-c.done:
	case <-time.After(changeTimeout):
		_, heldAt, recordAt := fleetWatch.result(c)
		b.Fatalf("%s: no hold and held record for %q within %s (held at %v, record at %v)", t, value, changeTimeout, heldAt, recordAt)
	}
	_, heldAt, recordAt := fleetWatch.result(c)
	s := sample{target: t, hold: heldAt.Sub(sent), rec: recordAt.Sub(sent)}
	s.latency = max(s.hold, s.rec)
	return s
}

// liveCopy returns the object as the benchmark's watch last saw it, as
// `kubectl edit` starts from a GET.
func liveCopy(ctx context.Context, t target) (client.Object, error) {
	var obj client.Object = &corev1.ConfigMap{}
	if t.Kind == "Deployment" {
		obj = &appsv1.Deployment{}
	}
	if err := fleetWatch.cache.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Name}, obj); err != nil {
		return nil, fmt.Errorf("reading %s: %w", t, err)
	}
	return obj.DeepCopyObject().(client.Object), nil
}

// setValue sets the value Git declares as VALUE: the ConfigMap's key or the
// Deployment container's environment variable.
func setValue(obj client.Object, value string) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		o.Data["VALUE"] = value
	case *appsv1.Deployment:
		o.Spec.Template.Spec.Containers[0].Env[0].Value = value
	}
}

// report turns the samples into the benchmark's metrics and logs the
// slowest changes.
func report(b *testing.B, samples []sample) {
	var lat, hold, rec []time.Duration
	var reqs []int64
	var total int64
	for _, s := range samples {
		lat, hold, rec = append(lat, s.latency), append(hold, s.hold), append(rec, s.rec)
		reqs = append(reqs, s.requests)
		total += s.requests
	}
	slices.Sort(lat)
	b.ReportMetric(0, "ns/op") // one b.N iteration is not one change
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(float64(total)/float64(len(samples)), "requests/change")
	b.ReportMetric(float64(slices.Min(reqs)), "requests/change-min")
	b.ReportMetric(float64(slices.Max(reqs)), "requests/change-max")
	if load := loadOrNaN(); !math.IsNaN(load) {
		b.ReportMetric(load, "load-avg")
	}
	slowest := slices.Clone(samples)
	slices.SortFunc(slowest, func(x, y sample) int { return int(y.latency - x.latency) })
	var lines []string
	for _, s := range slowest[:min(5, len(slowest))] {
		lines = append(lines, fmt.Sprintf("%s %.1fms (%d requests)", s.target, ms(s.latency), s.requests))
	}
	b.Logf("hold seen: p50 %.1fms p99 %.1fms; held record seen: p50 %.1fms p99 %.1fms",
		ms(percentile(hold, 50)), ms(percentile(hold, 99)), ms(percentile(rec, 50)), ms(percentile(rec, 99)))
	b.Logf("slowest changes: %s", strings.Join(lines, "; "))
	half := len(samples) / 2
	b.Logf("first and second half: p50 %.1fms / %.1fms, requests/change %.2f / %.2f (open records grow by one per change)",
		ms(median(samples[:half])), ms(median(samples[half:])), meanRequests(samples[:half]), meanRequests(samples[half:]))
}

func median(samples []sample) time.Duration {
	lat := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		lat = append(lat, s.latency)
	}
	return percentile(lat, 50)
}

func meanRequests(samples []sample) float64 {
	var n int64
	for _, s := range samples {
		n += s.requests
	}
	return float64(n) / float64(len(samples))
}
