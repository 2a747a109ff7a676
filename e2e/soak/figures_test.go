package soak

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// figures are what the soak measured and found, printed at its end and
// written to SOAK_RESULTS.
type figures struct {
	mu        sync.Mutex
	faults    []string
	counts    map[string]int
	failovers []time.Duration
	// leaderless are the spans no replica led: from a kill, a pause or
	// an apiserver restart to the next leader.
	leaderless [][2]time.Time
	breaches   []string
	// lines are the invariants' and the run's figures, in order.
	lines []string
}

func newFigures() *figures { return &figures{counts: map[string]int{}} }

func (f *figures) fault(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, line)
}

func (f *figures) count(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[what]++
}

func (f *figures) failover(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failovers = append(f.failovers, d)
}

// noLeader records a span no replica led.
func (f *figures) noLeader(from, to time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaderless = append(f.leaderless, [2]time.Time{from, to})
}

// whileLeaderless counts the edits made while no replica led, and the
// deletions among them.
func (f *figures) whileLeaderless(edits []timedEdit) (n, deletes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range edits {
		for _, w := range f.leaderless {
			if !e.At.Before(w[0]) && !e.At.After(w[1]) {
				n++
				if e.Pointer == "" {
					deletes++
				}
				break
			}
		}
	}
	return n, deletes
}

// editTimes lists when each edit was made, in UTC as the replicas log,
// the deletions as "delete" and those made while no replica led marked
// "*": what a breach is traced through the replicas' logs by.
func (f *figures) editTimes(edits []timedEdit) string {
	parts := make([]string, 0, len(edits))
	for _, e := range edits {
		what := e.Pointer
		if what == "" {
			what = "delete"
		}
		mark := ""
		if n, _ := f.whileLeaderless([]timedEdit{e}); n > 0 {
			mark = "*"
		}
		parts = append(parts, e.At.UTC().Format("15:04:05.000")+mark+" "+what)
	}
	return "{edits: " + strings.Join(parts, ", ") + "}"
}

// breach records a broken invariant: the soak fails.
func (f *figures) breach(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.breaches = append(f.breaches, fmt.Sprintf(format, args...))
}

// add records one figure line.
func (f *figures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

// failoverStats is the failovers' count, mean and maximum.
func (f *figures) failoverStats() string {
	if len(f.failovers) == 0 {
		return "none"
	}
	var sum, most time.Duration
	for _, d := range f.failovers {
		sum += d
		most = max(most, d)
	}
	return fmt.Sprintf("%d, mean %s, max %s", len(f.failovers), (sum / time.Duration(len(f.failovers))).Round(100*time.Millisecond), most.Round(100*time.Millisecond))
}

// markdown renders the figures as a bench/results.md section.
func (f *figures) markdown(c config, began time.Time, took time.Duration) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	verdict := "PASS"
	if len(f.breaches) > 0 {
		verdict = fmt.Sprintf("FAIL (%d breaches)", len(f.breaches))
	}
	fmt.Fprintf(&b, "## Soak (`make soak`, issue 22 §1): %s\n\n", verdict)
	fmt.Fprintf(&b, "- started: %s, took %s\n", began.UTC().Format(time.RFC3339), took.Round(time.Second))
	fmt.Fprintf(&b, "- seed: %d (replay with `SOAK_SEED=%d make soak`)\n", c.Seed, c.Seed)
	fmt.Fprintf(&b, "- load: %s\n", c)
	fmt.Fprintf(&b, "- failovers after a kill: %s\n", f.failoverStats())
	for _, k := range slices.Sorted(maps.Keys(f.counts)) {
		fmt.Fprintf(&b, "- %s: %d\n", k, f.counts[k])
	}
	for _, l := range f.lines {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	b.WriteString("\nFaults, in order:\n\n```text\n")
	for _, l := range f.faults {
		b.WriteString(l + "\n")
	}
	b.WriteString("```\n")
	if len(f.breaches) > 0 {
		b.WriteString("\nBreaches by kind:\n\n```text\n")
		kinds := map[string]int{}
		for _, l := range f.breaches {
			kinds[breachKind.ReplaceAllString(l, "#")]++
		}
		for _, k := range slices.Sorted(maps.Keys(kinds)) {
			fmt.Fprintf(&b, "%6d  %s\n", kinds[k], k)
		}
		b.WriteString("```\n")
		b.WriteString("\nBreaches (the first 50):\n\n```text\n")
		for _, l := range f.breaches[:min(len(f.breaches), 50)] {
			b.WriteString(l + "\n")
		}
		b.WriteString("```\n")
	}
	return b.String()
}

// breachKind is what differs between breaches of one kind: names,
// numbers, record names, the fields listed and the edits' times.
var breachKind = regexp.MustCompile(`\{edits: [^}]*\}|configmap-cm-[0-9]+-[0-9a-f]+|[a-z-]+-[0-9]+/cm-[0-9]+|SOAK_M[0-9]+(: v[0-9]+)?|\(has [^)]*\)|[0-9]+`)

// Markers around the soak's section of bench/results.md, which
// hack/bench.sh keeps when it rewrites the rest.
const (
	beginMarker = "<!-- soak:begin -->"
	endMarker   = "<!-- soak:end -->"
)

// writeResults puts section between the markers of path, replacing what
// was there, or appends it.
func writeResults(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	block := beginMarker + "\n" + section + endMarker + "\n"
	text := string(old)
	i, j := strings.Index(text, beginMarker), strings.Index(text, endMarker)
	if i >= 0 && j > i {
		text = text[:i] + block + strings.TrimPrefix(text[j+len(endMarker):], "\n")
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + block
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
