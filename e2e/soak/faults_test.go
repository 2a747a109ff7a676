package soak

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// trapWait bounds the wait for write-back to reach a trapped point; a
// kill whose trap caught nothing by then is made at random instead, and
// counted so.
const trapWait = 90 * time.Second

// leaderWait bounds the wait for a leader after a fault: a failover
// takes a lease's duration and a retry; a restarted apiserver, the
// replicas' restarts too.
const leaderWait = 3 * time.Minute

// isPush matches git's push request, on the git proxy.
func isPush(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
}

// isOpenPR matches the creation of a pull request, on the forge proxy.
func isOpenPR(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls")
}

// runLane runs a lane's faults at their times after start, one after
// another, and returns when the last is done.
func (s *soak) runLane(ctx context.Context, start time.Time, l lane) {
	for _, f := range l {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(f.At))): // the schedule's time, not a wait for a condition
		}
		began := time.Now()
		note, err := s.injectQuietly(ctx, f)
		line := fmt.Sprintf("+%s %s: %s (%s)", began.Sub(start).Round(time.Second), f.Kind, note, time.Since(began).Round(100*time.Millisecond))
		if f.Kind == reviewAction {
			line = fmt.Sprintf("+%s review %s: %s", began.Sub(start).Round(time.Second), f.Review, note)
		}
		if err != nil {
			line += ": " + err.Error()
			s.fig.breach("fault %s: %v", f.Kind, err)
		}
		s.fig.fault(line)
		s.t.Log(line)
	}
}

// injectQuietly injects f; when the soak paces Flux and f is a process
// fault, Flux applies nothing and the load edits nothing from its start
// until every edit made before it is recorded (see pacer).
func (s *soak) injectQuietly(ctx context.Context, f fault) (string, error) {
	if !s.c.paced() || !f.Kind.process() {
		return s.inject(ctx, f)
	}
	s.pace.mu.Lock()
	defer s.pace.mu.Unlock()
	// The fault itself sets faulting (quiet) as its leader is about to go:
	// a kill waiting for write-back needs the load's edits to get there.
	defer s.pace.faulting.Store(false)
	note, err := s.inject(ctx, f)
	if err == nil {
		err = s.caughtUp(ctx, time.Now())
	}
	return note, err
}

// quiet stops the load's edits until the process fault under way ends,
// when the soak paces Flux (see pacer), and waits until the leader has
// recorded every edit made so far: a deletion is recorded only once the
// audit log names its writer, up to 3 s later, and one whose leader dies
// meanwhile is lost (the full soak measures it).
func (s *soak) quiet(ctx context.Context) error {
	if !s.c.paced() {
		return nil
	}
	s.pace.faulting.Store(true)
	s.ld.settle()
	return s.caughtUp(ctx, time.Now())
}

// inject makes one fault happen and says what it did.
func (s *soak) inject(ctx context.Context, f fault) (string, error) {
	switch f.Kind {
	case killRandom, killBeforePush, killAfterPush, killAfterPR:
		return s.kill(ctx, f.Kind)
	case pauseLeader:
		return s.pause(ctx)
	case restartAPI, expireWatches:
		return s.restartAPI(ctx, f.Kind == expireWatches)
	case gitDown:
		s.w.git.Down()
		defer s.w.git.Up()
		return fmt.Sprintf("git server down for %s", s.c.GitDown), sleep(ctx, s.c.GitDown)
	case forgeErrors:
		s.w.forge.Fail(http.StatusInternalServerError, http.StatusTooManyRequests)
		defer s.w.forge.Up()
		return fmt.Sprintf("Gitea answered 500 and 429 for %s", s.c.ForgeErrors), sleep(ctx, s.c.ForgeErrors)
	case reviewAction:
		r := s.reviews[f.Review]
		if r == nil {
			return "no such review tenant", nil
		}
		note := fmt.Sprintf("%s of %s#%d (%s)", f.Review, r.Name, r.pr, r.branch)
		if err := s.w.act(ctx, r); err != nil {
			return note, err
		}
		if f.Review == reviewPush {
			s.ld.l.mu.Lock()
			s.ld.l.made(objKey{Tenant: r.Name, Name: objectName(0)}, "/data/REVIEW_2")
			s.ld.l.mu.Unlock()
		}
		return note, nil
	}
	return "", fmt.Errorf("unknown fault %q", f.Kind)
}

// sleep lasts an outage's length.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d): // the outage's length is the fault
		return nil
	}
}

// kill SIGKILLs the leader, first waiting for write-back to reach the
// kind's point: a push held before Gitea sees it (the commit made, not
// pushed), a push Gitea applied whose answer is held (pushed, not
// recorded), or a pull request Gitea created whose answer is held
// (opened, not recorded). Only the leader writes back, so the writer
// waiting there is the one killed.
func (s *soak) kill(ctx context.Context, kind faultKind) (string, error) {
	var proxy *testenv.FaultProxy
	var trap *testenv.Trap
	switch kind {
	case killBeforePush:
		proxy, trap = s.w.git, s.w.git.Trap(isPush, testenv.TrapBefore)
	case killAfterPush:
		proxy, trap = s.w.git, s.w.git.Trap(isPush, testenv.TrapAfter)
	case killAfterPR:
		proxy, trap = s.w.forge, s.w.forge.Trap(isOpenPR, testenv.TrapAfter)
	}
	where := "at random"
	if trap != nil {
		defer trap.Release()
		select {
		case <-trap.Caught():
			where = "holding " + trap.What
			s.fig.count("kills inside write-back: " + string(kind))
		case <-time.After(trapWait):
			if proxy.Untrap(trap) {
				where = "at random: write-back reached no " + string(kind) + " point within " + trapWait.String()
				s.fig.count("kills meant inside write-back, made at random")
			} else {
				<-trap.Caught() // caught just now
				where = "holding " + trap.What
			}
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	leader, err := s.reps.leader(ctx, leaderWait)
	if err != nil {
		return where, err
	}
	if err := s.quiet(ctx); err != nil {
		return where, err
	}
	if err := leader.Kill(); err != nil {
		return where, err
	}
	killed := time.Now()
	s.fig.count("leader SIGKILLs")
	next, err := s.reps.leader(ctx, leaderWait)
	if err != nil {
		return where, err
	}
	took := time.Since(killed)
	s.fig.failover(took)
	s.fig.noLeader(killed, time.Now())
	return fmt.Sprintf("%s killed %s; %s leads after %s", leader.Name, where, next.Name, took.Round(100*time.Millisecond)), nil
}

// pause SIGSTOPs the leader until another replica holds the lease, then
// lets it run again: it wakes with a lease it believes it holds and must
// step down without writing.
func (s *soak) pause(ctx context.Context) (string, error) {
	leader, err := s.reps.leader(ctx, leaderWait)
	if err != nil {
		return "", err
	}
	if err := s.quiet(ctx); err != nil {
		return "", err
	}
	if err := leader.Pause(); err != nil {
		return "", err
	}
	paused := time.Now()
	next, err := s.reps.leader(ctx, leaderWait)
	if cerr := leader.Continue(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	s.fig.noLeader(paused, time.Now())
	s.fig.count("leader pauses past the lease")
	return fmt.Sprintf("%s paused %s, until %s led; resumed", leader.Name, time.Since(paused).Round(100*time.Millisecond), next.Name), nil
}

// restartAPI restarts kube-apiserver, after compacting etcd when expire,
// and waits for a leader again.
func (s *soak) restartAPI(ctx context.Context, expire bool) (string, error) {
	if err := s.quiet(ctx); err != nil {
		return "", err
	}
	note := ""
	if expire {
		rev, err := env.CompactEtcd(ctx)
		if err != nil {
			return "", err
		}
		note = fmt.Sprintf("etcd compacted at revision %d; ", rev)
	}
	began := time.Now()
	if err := env.RestartAPIServer(ctx); err != nil {
		return note, err
	}
	down := time.Since(began)
	s.fig.count("kube-apiserver restarts")
	leader, err := s.reps.leader(ctx, leaderWait)
	if err != nil {
		return note, err
	}
	s.fig.noLeader(began, time.Now())
	return fmt.Sprintf("%skube-apiserver back after %s; %s leads after %s", note, down.Round(100*time.Millisecond),
		leader.Name, time.Since(began).Round(100*time.Millisecond)), nil
}
