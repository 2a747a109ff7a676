package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// floodRate is the audit events a second the flood sends (issue 22
	// §2: "a flood of 10,000 events a second").
	floodRate = 10_000
	// floodBatch bounds one POST, as the apiserver's
	// --audit-webhook-batch-max-size (400 by default) does.
	floodBatch = 400
	// floodEditsPerBlock and floodEditEvery shape one block: 20 live
	// edits, one every 2 s, so a flood block lasts 40 s and brings
	// 400,000 events, half of them writes to a watched kind under a name
	// never seen before: the store's 200,000 are reached by the end of the
	// first flood block, and its bound holds through the others.
	floodEditsPerBlock = 20
	floodEditEvery     = 2 * time.Second
	// floodRounds is how many times a quiet block and a flood block
	// alternate.
	floodRounds = 3
)

// floodTree is BenchmarkAuditFlood's fleet: 400 objects in 4
// Kustomizations, enough ConfigMaps for every block's edits to be new
// drifts.
var floodTree = tree{prefix: "flood", objects: 400, kustomizations: 4, deployments: 1}

// BenchmarkAuditFlood (issue 22 §2) measures the live path and reflux's
// memory while its audit webhook takes a flood of 10,000 events a
// second. The real reflux binary runs with --audit-addr in a fresh
// environment whose apiserver sends it its own audit events too, as in
// production. Blocks of 20 live edits, one every 2 s, alternate without
// and with the flood, three rounds, so both halves see the same load
// drift; the flood sends batches of up to 400 events,
// half of them updates of ConfigMaps under ever new names (the kind
// reflux watches: each is kept, the worst case for memory), half of
// Leases (a kind it does not watch: dropped at once).
//
// It reports, per half, hold-p50/p99-ms and record-p50/p99-ms (from the
// apiserver acknowledging the edit to the benchmark's watches seeing the
// hold and the Held record) and their flood/quiet ratios, measured in
// the same run; lost edits; events/s the flood achieved and
// refused-batches; reflux's VmRSS before the first flood block
// (rss-quiet-mib) and after each (rss-floodN-mib), the ratio of the last
// to the first (memory stops growing once the store is full), VmHWM
// (rss-peak-mib), the Go heap in use and the writes its audit store holds
// after each flood block (heap-floodN-mib, audit-writes-floodN) and those
// it dropped early (audit-evicted); reflux's processor time in percent of
// one core over each half; the one-minute load average.
func BenchmarkAuditFlood(b *testing.B) {
	runCases(b, []tree{floodTree}, runAuditFlood)
}

// floodRun is the case in progress.
type floodRun struct {
	scaleRun
	editor client.Client
	url    string
	fig    floodFigures
	next   int // the next target's index
}

func runAuditFlood(b *testing.B, c tree) {
	r := &floodRun{scaleRun: scaleRun{b: b, c: c}}
	r.env = fixture.NewEnv(b, testenv.Options{StartTimeout: 2 * time.Minute, WaitTimeout: fluxApplyTimeout,
		AuditWebhook: &testenv.AuditWebhook{}})
	blocks := []step{{"Flux applying the tree", r.applyTree}, {"reflux starting", r.start}}
	for i := range floodRounds {
		blocks = append(blocks, step{fmt.Sprintf("round %d without the flood", i+1), r.block(false)},
			step{fmt.Sprintf("round %d with the flood", i+1), r.block(true)})
	}
	if err := runSteps(context.Background(), blocks, &r.fig); err != nil {
		b.Fatal(err)
	}
	r.fig.report(b)
}

// start starts reflux with its audit webhook where the apiserver sends
// its events, and waits for it to report the fleet clean; then makes the
// editor, a user who may edit ConfigMaps only.
func (r *floodRun) start(ctx context.Context) error {
	r.reflux = fixture.StartReflux(r.b, r.env, fixture.Options{AsDeployed: true, StartTimeout: 5 * time.Minute,
		AuditWebhook: true})
	// The flood goes to reflux itself; the apiserver's events reach it
	// through the environment's forwarding address.
	r.url = "http://" + r.reflux.AuditAddr + "/audit"
	if _, err := r.obs.waitAll(ctx, r.c.ksNames(), cleanAt, scaleReadyTimeout); err != nil {
		return fmt.Errorf("waiting for reflux to report NoDrift: %w", err)
	}
	if _, _, err := waitQuiet(ctx, r.reflux.Process, settleTimeout); err != nil {
		return err
	}
	role, binding := editorRBAC()
	for _, obj := range []client.Object{role, binding} {
		if err := r.env.Client.Create(ctx, obj); err != nil {
			return err
		}
	}
	user, err := r.env.AddUser(editorName, editorGroup)
	if err != nil {
		return err
	}
	r.editor, err = client.New(user.Config, client.Options{Scheme: r.env.Scheme})
	r.fig.loadStart = loadOrNaN()
	return err
}

// block makes floodEditsPerBlock edits, one every floodEditEvery, with
// the flood running throughout when flood is true.
func (r *floodRun) block(flood bool) func(context.Context) error {
	return func(ctx context.Context) error {
		if flood && r.fig.rssQuiet == 0 {
			var err error
			if r.fig.rssQuiet, err = r.reflux.RSS(); err != nil {
				return err
			}
		}
		cpu0, err := r.reflux.CPUTime()
		if err != nil {
			return err
		}
		began := time.Now()
		var f *flooder
		if flood {
			f = startFlood(ctx, r.url)
		}
		edits, err := r.edits(ctx)
		if f != nil {
			f.stop()
			r.fig.addFlood(f)
		}
		if err != nil {
			return err
		}
		cpu1, err := r.reflux.CPUTime()
		if err != nil {
			return err
		}
		r.fig.add(flood, edits, cpu1-cpu0, time.Since(began))
		if flood {
			if err := r.memory(ctx); err != nil {
				return err
			}
		}
		r.fig.loadEnd = loadOrNaN()
		return nil
	}
}

// memory reads reflux's memory after a flood block: VmRSS and VmHWM, the
// Go heap in use, and what its audit store holds and dropped.
func (r *floodRun) memory(ctx context.Context) error {
	var m floodMemory
	var err error
	if m.rss, err = r.reflux.RSS(); err != nil {
		return err
	}
	if r.fig.peak, err = r.reflux.PeakRSS(); err != nil {
		return err
	}
	metrics, err := r.reflux.Metrics(ctx)
	if err != nil {
		return err
	}
	m.heap, _ = metrics.Sum("go_memstats_heap_inuse_bytes")
	m.writes, _ = metrics.Sum("reflux_audit_writes")
	m.evicted, _ = metrics.Sum("reflux_audit_evicted_total")
	r.fig.memory = append(r.fig.memory, m)
	return nil
}

// edits makes one block's edits at their pace and waits for each to be
// held and recorded (or lost).
func (r *floodRun) edits(ctx context.Context) ([]editResult, error) {
	targets := spreadTargets(r.c, 2*floodRounds*floodEditsPerBlock)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	tick := time.NewTicker(floodEditEvery)
	defer tick.Stop()
	var edits []*edit
	for i := range floodEditsPerBlock {
		e, err := editOnce(ctx, r.editor, r.obs, targets[r.next], fmt.Sprintf("flood-%s-%d", run, i))
		if err != nil {
			return nil, err
		}
		r.next++
		edits = append(edits, e)
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]editResult, 0, len(edits))
	for _, e := range edits {
		acked, _, _ := r.obs.result(e)
		if err := waitDone(ctx, e.done, time.Until(acked.Add(lostAfter))); err != nil {
			return nil, err
		}
		out = append(out, resultOf(r.obs, e))
	}
	return out, nil
}

// flooder posts audit EventLists at floodRate until stopped.
type flooder struct {
	url             string
	cancel          context.CancelFunc
	done            chan struct{}
	began, ended    time.Time
	events, refused atomic.Int64
	batches, failed atomic.Int64
	mu              sync.Mutex
	firstErr        error
}

func startFlood(ctx context.Context, url string) *flooder {
	ctx, cancel := context.WithCancel(ctx)
	f := &flooder{url: url, cancel: cancel, done: make(chan struct{}), began: time.Now()}
	go f.run(ctx)
	return f
}

func (f *flooder) stop() {
	f.cancel()
	<-f.done
	f.ended = time.Now()
}

// run sends what is due by the clock in each batch, so the average rate
// holds even when one POST takes longer than the batch's share of time.
func (f *flooder) run(ctx context.Context) {
	defer close(f.done)
	seq := 0
	tick := time.NewTicker(floodBatch * time.Second / floodRate / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		due := int(time.Since(f.began).Seconds()*floodRate) - seq
		for due > 0 && ctx.Err() == nil {
			n := min(due, floodBatch)
			f.post(ctx, floodEvents(seq, n))
			seq, due = seq+n, due-n
		}
	}
}

func (f *flooder) post(ctx context.Context, body []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		f.fail(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			f.fail(err)
		}
		return
	}
	_ = resp.Body.Close()
	f.batches.Add(1)
	if resp.StatusCode != http.StatusOK {
		f.refused.Add(1)
		f.fail(fmt.Errorf("audit webhook answered %s", resp.Status))
		return
	}
	f.events.Add(int64(bytes.Count(body, []byte(`"auditID"`))))
}

func (f *flooder) fail(err error) {
	f.failed.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.firstErr == nil {
		f.firstErr = err
	}
}

// floodEvents is one EventList of n successful updates, numbered from
// seq: even ones of a ConfigMap never written before, odd ones of a Lease.
func floodEvents(seq, n int) []byte {
	now := metav1.NewMicroTime(time.Now())
	list := auditv1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "EventList"}}
	list.Items = make([]auditv1.Event, n)
	for i := range list.Items {
		id := seq + i
		ref := &auditv1.ObjectReference{Resource: "configmaps", Namespace: "flood-elsewhere", Name: fmt.Sprintf("cm-%d", id), APIVersion: "v1"}
		if id%2 == 1 {
			ref = &auditv1.ObjectReference{Resource: "leases", APIGroup: "coordination.k8s.io", Namespace: "kube-node-lease",
				Name: fmt.Sprintf("node-%d", id%500), APIVersion: "v1"}
		}
		list.Items[i] = auditv1.Event{Level: auditv1.LevelMetadata, AuditID: types.UID(fmt.Sprintf("flood-%d", id)),
			Stage: auditv1.StageResponseComplete, Verb: "update", ObjectRef: ref, UserAgent: "flood/1.0",
			RequestURI:     "/api/v1/namespaces/" + ref.Namespace + "/" + ref.Resource + "/" + ref.Name + "?fieldManager=flood",
			ResponseStatus: &metav1.Status{Code: http.StatusOK}, RequestReceivedTimestamp: now, StageTimestamp: now}
		list.Items[i].User.Username = "system:serviceaccount:flood:writer"
	}
	body, err := json.Marshal(&list)
	if err != nil {
		panic(err) // a fixed struct always encodes
	}
	return body
}
