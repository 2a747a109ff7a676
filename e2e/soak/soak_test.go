package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// soak is one run: its configuration, the world it runs in and what it
// measured.
type soak struct {
	t       *testing.T
	c       config
	w       *world
	reps    *replicas
	tenants []*tenant
	reviews map[review]*reviewed
	ld      *load
	fig     *figures
	// pace is the harness playing Flux's interval, when paced.
	pace *pacer
}

// TestSoak runs the soak the SOAK_* environment describes: the short
// variant under -race (`make soak-short`), the full one from `make soak`.
func TestSoak(t *testing.T) {
	c, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SOAK_DURATION") == "" && (os.Getenv("SOAK_SHORT") == "" || !raceEnabled) {
		t.Skip("the short soak runs under -race in make soak-short, the full one in make soak")
	}
	fmt.Printf("soak: %s\n", c)
	began := time.Now()
	s := &soak{t: t, c: c, reviews: map[review]*reviewed{}, fig: newFigures()}
	fixture.Shared(t)
	ctx := context.Background()
	s.setUp(ctx)
	s.run(ctx)
	s.conclude(ctx, began)
}

// setUp starts Gitea, the tenants and the replicas, and waits until
// reflux reports every tenant clean and the reviewed ones' pull requests
// are open.
func (s *soak) setUp(ctx context.Context) {
	t := s.t
	var err error
	if s.w, err = startWorld(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.w.stop(); err != nil {
			t.Error(err)
		}
	})
	per := s.c.Objects / s.c.Tenants
	for i := range s.c.Tenants {
		tn, err := s.w.newTenant(ctx, fmt.Sprintf("soak-%d", i), per, s.c.FluxInterval)
		if err != nil {
			t.Fatal(err)
		}
		s.tenants = append(s.tenants, tn)
	}
	for _, a := range s.c.Reviews {
		r, err := s.w.prepareReview(ctx, a, s.c.paced())
		if err != nil {
			t.Fatal(err)
		}
		s.reviews[a] = r
	}
	all := append([]*tenant(nil), s.tenants...)
	for _, r := range s.reviews {
		all = append(all, r.tenant)
	}
	for _, tn := range all {
		if err := env.WaitForReady(ctx, tn.KS); err != nil {
			t.Fatal(err)
		}
	}
	s.fig.add("setup: Flux applied %d objects in %d Kustomizations", s.c.Objects+4*len(s.reviews), len(all))
}

// run starts the replicas, waits for them to govern every tenant, opens
// the reviewed pull requests, then runs the load and both fault lanes,
// and waits for the backlog to drain.
func (s *soak) run(ctx context.Context) {
	t := s.t
	superCtx, stopSupervising := context.WithCancel(ctx)
	var err error
	if s.reps, err = startReplicas(superCtx, t); err != nil {
		t.Fatal(err)
	}
	// Before any t.Cleanup stops the processes: no restarts meanwhile.
	defer s.reps.wait()
	defer stopSupervising()
	if _, err := s.reps.leader(ctx, leaderWait); err != nil {
		t.Fatal(err)
	}
	for _, tn := range s.tenants {
		if err := (fixture.Namespace{Env: env, Name: tn.Name}).WaitClean(ctx, tn.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range s.reviews {
		if err := r.propose(ctx, 1); err != nil {
			t.Fatalf("review %s: %v", r.action, err)
		}
	}
	before := s.leaderRSS(ctx)
	s.ld = &load{c: s.c, tenants: s.tenants, l: newLedger(), rng: rand.New(rand.NewPCG(s.c.Seed, 1))}
	s.pace = &pacer{}
	if s.c.paced() {
		s.ld.quiet = &s.pace.faulting
		for _, tn := range append(append([]*tenant(nil), s.tenants...), s.reviewTenants()...) {
			s.pace.objs = append(s.pace.objs, tn.Source, tn.KS)
		}
		paceCtx, stopPacing := context.WithCancel(ctx)
		var paced sync.WaitGroup
		paced.Go(func() { s.pace.run(paceCtx) })
		defer paced.Wait()
		defer stopPacing()
	}
	process, network := s.c.schedule()
	start := time.Now()
	loadCtx, stopLoad := context.WithTimeout(ctx, s.c.Duration)
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Go(func() { s.ld.run(loadCtx) })
	wg.Go(func() { s.runLane(ctx, start, process) })
	wg.Go(func() { s.runLane(ctx, start, network) })
	wg.Wait()
	lastFault := time.Now()
	s.fig.add("load: %s of edits, the last fault over %s after they began; %d edits late (no worker free); made: %s",
		s.c.Duration, time.Since(start).Round(time.Second), s.ld.late.Load(), s.ld.counts())
	s.ld.l.mu.Lock()
	n, deletes := s.fig.whileLeaderless(s.ld.l.timed)
	s.ld.l.mu.Unlock()
	s.fig.add("edits made while no replica led (after a kill or pause, or across an apiserver restart): %d, %d of them deletions", n, deletes)
	s.drain(ctx, lastFault)
	s.memory(ctx, before)
	starts, restarts := s.reps.counts()
	s.fig.add("reflux processes: %d started, %d of them restarts after an exit", starts, restarts)
	s.fig.add("git proxy: %v; forge proxy: %v", s.w.git.Served(), s.w.forge.Served())
	if s.c.paced() {
		s.fig.add("Flux reconciles paced by the harness: %d", s.pace.count())
	}
}

// counts renders the ledger's counts.
func (ld *load) counts() string {
	ld.l.mu.Lock()
	defer ld.l.mu.Unlock()
	var parts []string
	for _, k := range []string{"merge", "alert", "hotfix", "delete", "secret", "not made", "uncertain", "edits held back during a process fault"} {
		parts = append(parts, fmt.Sprintf("%s %d", k, ld.l.counts[k]))
	}
	return strings.Join(parts, ", ")
}

// drain waits, up to the configured bound after the last fault, until
// the backlog is gone (the leader has no live change waiting and every
// open Merge record of the load is pushed) and the invariants hold, or
// have stopped changing for settle: a breach that outlives the backlog
// is reported without waiting out the bound.
func (s *soak) drain(ctx context.Context, lastFault time.Time) {
	const settle = time.Minute
	var v *verdict
	var drainedAt, stableSince time.Time
	var lastProblems string
	for {
		v = s.check(ctx)
		waiting := s.waiting(ctx)
		backlog := s.backlog(ctx)
		now := time.Now()
		if drainedAt.IsZero() && waiting == 0 && backlog == 0 {
			drainedAt = now
			s.fig.add("drained: no live change waiting and every open Merge record pushed %s after the last fault (bound %s)",
				now.Sub(lastFault).Round(time.Second), s.c.Drain)
		}
		if p := strings.Join(v.problems, "\n"); p != lastProblems || stableSince.IsZero() {
			lastProblems, stableSince = p, now
		}
		done := !drainedAt.IsZero() && (len(v.problems) == 0 || now.Sub(stableSince) > settle)
		if done || now.Sub(lastFault) > s.c.Drain {
			if drainedAt.IsZero() {
				s.fig.breach("not drained %s after the last fault: %.0f live changes waiting, %d open Merge records unpushed",
					s.c.Drain, waiting, backlog)
			}
			for _, p := range v.problems {
				s.fig.breach("%s", p)
			}
			break
		}
		s.t.Logf("draining: %d problems (first: %s), %.0f live changes waiting, %d Merge records unpushed",
			len(v.problems), first(v.problems), waiting, backlog)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second): // polling a condition that takes seconds to change
		}
	}
	s.fig.add("nothing lost live: %d edited objects recorded (%d held, %d released after Flux's in-flight apply undid them, kept as evidence); %d of %d deletions recorded",
		v.recorded, v.held, v.released, v.deletesRecorded, v.deletes)
	s.fig.add("nothing lost in Git: %d of %d Merge flags on a branch or merged", v.flags, v.flagsWritten)
	s.fig.add("nothing written twice: %d pull requests, %d open, none two for one branch; reviewed tenants: %d", v.prs, v.openPRs, len(s.reviews))
	s.fig.add("invariant problems at the end: %d", len(v.problems))
}

// backlog counts the load's open Merge records not pushed yet, -1 when
// unknown.
func (s *soak) backlog(ctx context.Context) int {
	n := 0
	for _, t := range s.tenants {
		list := &refluxv1.DriftList{}
		if err := env.Client.List(ctx, list, client.InNamespace(t.Name)); err != nil {
			return -1
		}
		for _, d := range list.Items {
			if d.Status.Closed == nil && d.Status.Action == refluxv1.DriftMerge &&
				(d.Status.State != refluxv1.DriftProposed || d.Status.Commit == "") {
				n++
			}
		}
	}
	return n
}

func first(ps []string) string {
	if len(ps) == 0 {
		return "none"
	}
	return ps[0]
}

// waiting is the leader's reflux_live_changes_waiting, -1 when unknown.
func (s *soak) waiting(ctx context.Context) float64 {
	p, err := s.reps.leader(ctx, time.Minute)
	if err != nil {
		return -1
	}
	m, err := p.Metrics(ctx)
	if err != nil {
		return -1
	}
	v, _ := m.Sum("reflux_live_changes_waiting")
	return v
}

// leaderRSS is the leader's resident memory, 0 when unknown.
func (s *soak) leaderRSS(ctx context.Context) int64 {
	p, err := s.reps.leader(ctx, time.Minute)
	if err != nil {
		return 0
	}
	rss, _ := p.RSS()
	return rss
}

// memory compares the leader's resident memory after the drain with the
// leader's before the faults: within half again, plus 64 MiB of slack
// for a new process's caches.
func (s *soak) memory(ctx context.Context, before int64) {
	after := s.leaderRSS(ctx)
	s.fig.add("leader RSS: %d MiB before the faults, %d MiB after the drain", before>>20, after>>20)
	if before > 0 && after > before*3/2+64<<20 {
		s.fig.breach("memory did not come back: %d MiB after the drain, %d MiB before the faults", after>>20, before>>20)
	}
}

// conclude checks for leaked Secret values, prints the figures, writes
// them when asked and fails the test on any breach.
func (s *soak) conclude(ctx context.Context, began time.Time) {
	leaks, err := s.leaks(ctx)
	if err != nil {
		s.fig.breach("scanning for Secret values: %v", err)
	}
	for _, l := range leaks {
		s.fig.breach("%s", l)
	}
	s.fig.add("no Secret value: %d live values and %d in Git looked for in every commit, reflux log, event and record; %d found",
		len(s.ld.l.secrets), len(s.tenants), len(leaks))
	md := s.fig.markdown(s.c, began, time.Since(began))
	fmt.Println(md)
	if s.c.Results != "" {
		if err := writeResults(s.c.Results, md); err != nil {
			s.t.Error(err)
		}
	}
	for _, b := range s.fig.breaches {
		s.t.Error(b)
	}
}
