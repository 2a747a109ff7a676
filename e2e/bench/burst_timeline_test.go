package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// burstSampleEvery spaces the burst timeline's samples.
const burstSampleEvery = 500 * time.Millisecond

// burstSample is one reading of where a burst's edits are: what waits in
// reflux's live and hold queues (client-go's workqueue_depth, which
// controller-runtime exports for every named queue), how many edits the
// benchmark's watches have seen held and recorded, and reflux's requests
// since the burst began.
type burstSample struct {
	at             time.Duration
	live, hold     float64
	held, recorded int
	requests       float64
}

// timeline samples until stop is closed, then returns what it read. A
// scrape that fails leaves its sample out: the timeline is a picture of
// the burst, and the figures come from the observer's watches.
func timeline(ctx context.Context, p *testenv.Process, obs *observer, began time.Time, stop <-chan struct{}) []burstSample {
	var out []burstSample
	var base float64
	tick := time.NewTicker(burstSampleEvery)
	defer tick.Stop()
	for {
		m, err := p.Metrics(ctx)
		if err == nil {
			s := burstSample{at: time.Since(began)}
			s.live, _ = m.Value("workqueue_depth", map[string]string{"name": "reflux-live"})
			s.hold, _ = m.Value("workqueue_depth", map[string]string{"name": "reflux-hold"})
			n, _ := m.Sum(requestsMetric)
			if len(out) == 0 {
				base = n
			}
			s.requests = n - base
			s.held, s.recorded = obs.progress()
			out = append(out, s)
		}
		select {
		case <-tick.C:
		case <-stop:
			return out
		case <-ctx.Done():
			return out
		}
	}
}

// formatTimeline renders samples as the table bench/results.md shows,
// one row per second once nothing moves, so a long tail stays short.
func formatTimeline(samples []burstSample) string {
	var b strings.Builder
	b.WriteString("| t (s) | live queue | hold queue | held | recorded | reflux requests |\n|---|---|---|---|---|---|\n")
	var last burstSample
	for i, s := range samples {
		still := i > 0 && s.live == last.live && s.hold == last.hold && s.held == last.held && s.recorded == last.recorded
		if still && i != len(samples)-1 {
			continue
		}
		fmt.Fprintf(&b, "| %.1f | %.0f | %.0f | %d | %d | %.0f |\n", s.at.Seconds(), s.live, s.hold, s.held, s.recorded, s.requests)
		last = s
	}
	return b.String()
}

// cpuProfile fetches a CPU profile of seconds from p's pprof endpoint
// (Flux's pprof handlers, on the metrics address) into dir, and returns
// the file's path once the profile is in.
func cpuProfile(ctx context.Context, p *testenv.Process, seconds int, dir string) (string, error) {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.MetricsAddr, seconds)
	return fetchProfile(ctx, http.DefaultClient, url, seconds, filepath.Join(dir, fmt.Sprintf("burst-cpu-%d.pprof", time.Now().Unix())))
}

// apiserverProfile fetches a CPU profile of seconds from the
// kube-apiserver's own pprof endpoint, as cfg's user (an admin): on two
// cores the apiserver, not reflux, takes most of a burst's processor
// time, and this says on what.
func apiserverProfile(ctx context.Context, cfg *rest.Config, seconds int, dir string) (string, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), seconds)
	return fetchProfile(ctx, hc, url, seconds, filepath.Join(dir, fmt.Sprintf("burst-apiserver-cpu-%d.pprof", time.Now().Unix())))
}

// fetchProfile fetches a CPU profile of seconds from url into path, and
// returns path once the profile is in.
func fetchProfile(ctx context.Context, hc *http.Client, url string, seconds int, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+30)*time.Second)
	defer cancel()
	body, err := get(ctx, hc, url)
	if err != nil {
		return "", err
	}
	defer body.Close() //nolint:errcheck // read-only
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, body); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("reading the profile: %w", err)
	}
	return path, f.Close()
}

// get starts a GET of url and returns its body once the status is 200.
func get(ctx context.Context, hc *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// writeTimeline writes the timeline's table into profileDir and returns
// the file's path.
func writeTimeline(samples []burstSample) (string, error) {
	dir := profileDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("burst-timeline-%d.md", time.Now().Unix()))
	return path, os.WriteFile(path, []byte(formatTimeline(samples)), 0o644)
}

// profileDir is where the burst's CPU profile and timeline go:
// BENCH_PROFILE_DIR, or the system's temporary directory.
func profileDir() string {
	if d := os.Getenv("BENCH_PROFILE_DIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// background runs f in a goroutine and returns a wait for it.
func background(f func()) (wait func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
	return wg.Wait
}

// burstTimes are a burst's edits as the benchmark's watches saw them.
type burstTimes struct {
	// held and recorded run from each edit's acknowledgement to its hold,
	// and to its Held record.
	held, recorded []time.Duration
	// heldLast and recordedLast run from the last acknowledgement to the
	// last hold, and the last record, seen: the issue's "within 5 s of the
	// last one".
	heldLast, recordedLast time.Duration
	// unseen counts the edits whose hold or record no watch delivered.
	unseen int
}

// burstOutcomes waits, up to timeout, for every edit's hold and record,
// and reads their times.
func burstOutcomes(ctx context.Context, obs *observer, edits []*edit, timeout time.Duration) burstTimes {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	waiting := true
	for _, e := range edits {
		if !waiting {
			break
		}
		select {
		case <-e.done:
		case <-deadline.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	var out burstTimes
	var lastAck, lastHeld, lastRecord time.Time
	for _, e := range edits {
		acked, heldAt, recordAt := obs.result(e)
		if acked.After(lastAck) {
			lastAck = acked
		}
		if acked.IsZero() || heldAt.IsZero() || recordAt.IsZero() {
			out.unseen++
			continue
		}
		out.held = append(out.held, heldAt.Sub(acked))
		out.recorded = append(out.recorded, recordAt.Sub(acked))
		if heldAt.After(lastHeld) {
			lastHeld = heldAt
		}
		if recordAt.After(lastRecord) {
			lastRecord = recordAt
		}
	}
	if !lastHeld.IsZero() {
		out.heldLast, out.recordedLast = lastHeld.Sub(lastAck), lastRecord.Sub(lastAck)
	}
	return out
}
