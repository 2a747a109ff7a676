package soak

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// Leader election as the replicas run it: short, so a failover fits the
// soak, through reflux's Flux-style flags.
const (
	leaseName     = "reflux-leader-election"
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = time.Second
)

// replicas are reflux's two replicas, each restarted when it exits as a
// Deployment's pod is: after a SIGKILL, a lost lease or a start that
// failed while the apiserver was away.
type replicas struct {
	t    testing.TB
	args []string
	// audit is each replica's --audit-addr, which auditFanout posts to.
	audit []string

	mu       sync.Mutex
	cur      [2]*testenv.RefluxProcess
	starts   int // processes started, the first two included
	restarts int // of them, after an exit
	wg       sync.WaitGroup
}

// startReplicas starts both replicas and their supervisors, which end
// with ctx; extra flags follow the soak's own, and win over them.
func startReplicas(ctx context.Context, t testing.TB, extra ...string) (*replicas, error) {
	audit, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	fan, err := startAuditFanout(env, audit)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = fan.close() }) // after the replicas' stops
	r := &replicas{t: t, audit: audit, args: []string{"--enable-leader-election",
		"--leader-election-lease-duration=" + leaseDuration.String(),
		"--leader-election-renew-deadline=" + renewDeadline.String(),
		"--leader-election-retry-period=" + retryPeriod.String(),
		// The soak's repositories hold hundreds of objects per file.
		"--concurrent=4"}}
	r.args = append(r.args, extra...)
	for i := range r.cur {
		p, err := r.start(i)
		if err != nil {
			return nil, err
		}
		r.cur[i] = p
	}
	for i := range r.cur {
		r.wg.Go(func() { r.supervise(ctx, i) })
	}
	return r, nil
}

// start runs generation r.starts of replica i under a name of its own, so
// every process keeps its log.
func (r *replicas) start(i int) (*testenv.RefluxProcess, error) {
	r.mu.Lock()
	r.starts++
	name := fmt.Sprintf("reflux-%c-%d", 'a'+i, r.starts)
	r.mu.Unlock()
	return fixture.TryStartReflux(r.t, env, fixture.Options{Name: name, Args: append(r.args, "--audit-addr="+r.audit[i])})
}

// supervise restarts replica i whenever it exits, until ctx ends.
func (r *replicas) supervise(ctx context.Context, i int) {
	for {
		p := r.get(i)
		select {
		case <-ctx.Done():
			return
		case <-p.Done():
		}
		for {
			next, err := r.start(i)
			if err == nil {
				r.mu.Lock()
				r.cur[i] = next
				r.restarts++
				r.mu.Unlock()
				break
			}
			r.t.Logf("restarting replica %d: %v", i, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second): // a kubelet's back-off, shortened
			}
		}
	}
}

func (r *replicas) get(i int) *testenv.RefluxProcess {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur[i]
}

// peerOf returns the running replica of the slot p is not in.
func (r *replicas) peerOf(p *testenv.RefluxProcess) *testenv.RefluxProcess {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur[0] == p {
		return r.cur[1]
	}
	return r.cur[0]
}

// wait waits for the supervisors, once their context ended.
func (r *replicas) wait() { r.wg.Wait() }

// counts returns how many processes ran and how many were restarts.
func (r *replicas) counts() (starts, restarts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts, r.restarts
}

// leader waits until exactly one running replica says it leads
// (leader_election_master_status, scraped over HTTP) and the Lease names
// a holder whose renewal is fresh, and returns it.
func (r *replicas) leader(ctx context.Context, timeout time.Duration) (*testenv.RefluxProcess, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		p, err := r.leaderOnce(ctx)
		if err == nil {
			return p, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no leader within %s: %w", timeout, last)
		case <-time.After(200 * time.Millisecond): // polling the replicas' metrics
		}
	}
}

func (r *replicas) leaderOnce(ctx context.Context) (*testenv.RefluxProcess, error) {
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.RefluxNamespace, Name: leaseName}, lease); err != nil {
		return nil, err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || lease.Spec.RenewTime == nil ||
		time.Since(lease.Spec.RenewTime.Time) > leaseDuration {
		return nil, errors.New("the Lease has no live holder")
	}
	var leaders []*testenv.RefluxProcess
	for i := range r.cur {
		p := r.get(i)
		// A paused replica answers nothing: give up on it quickly.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := p.Metrics(sctx)
		cancel()
		if err != nil {
			continue
		}
		if v, _ := fixture.Value(m, "leader_election_master_status", map[string]string{"name": leaseName}); v == 1 {
			leaders = append(leaders, p)
		}
	}
	if len(leaders) != 1 {
		return nil, fmt.Errorf("%d replicas say they lead", len(leaders))
	}
	return leaders[0], nil
}
