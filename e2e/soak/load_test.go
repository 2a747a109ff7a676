package soak

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// editor is the field manager of the soak's live edits: a kubectl one,
// whose writes Flux reverts (kustomize-controller strips kubectl-managed
// fields), so each is drift reflux must hold.
const editor = "kubectl-edit"

// role is what the edits of an object do, by its index: a new flag
// (Merge), a changed value (Alert), a declared manual hotfix, or a
// deletion.
type role int

const (
	roleMerge role = iota
	roleAlert
	roleHotfix
	roleDelete
	roles
)

func roleOf(i int) role { return role(i % int(roles)) }

// objKey names one live object of a tenant.
type objKey struct{ Tenant, Name string }

// ledger is what the load did, as the invariants check it. A write whose
// outcome is unknown (the apiserver went away mid-request) marks its
// object uncertain: it is still checked for a record, not for its value.
type ledger struct {
	mu sync.Mutex
	// merges are the keys added to each Merge object, in order.
	merges map[objKey][]string
	// values are the last LEVEL written to each Alert and hotfix object.
	values    map[objKey]string
	uncertain map[objKey]bool
	deleted   map[objKey]bool
	// secrets are the Secret values written live.
	secrets []string
	counts  map[string]int
	// timed are the edits made, by when: the paced soak lets Flux apply
	// only once every edit before a fault's end is recorded.
	timed []timedEdit
}

// timedEdit is one edit known to have been made: a field written, or the
// object deleted (Pointer empty).
type timedEdit struct {
	At      time.Time
	Key     objKey
	Pointer string
}

// made notes an edit that succeeded now; call it with mu held.
func (l *ledger) made(k objKey, pointer string) {
	l.timed = append(l.timed, timedEdit{At: time.Now(), Key: k, Pointer: pointer})
}

func newLedger() *ledger {
	return &ledger{merges: map[objKey][]string{}, values: map[objKey]string{}, uncertain: map[objKey]bool{},
		deleted: map[objKey]bool{}, counts: map[string]int{}}
}

func (l *ledger) count(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[what]++
}

// load makes live edits at a steady rate until ctx ends.
type load struct {
	c       config
	tenants []*tenant
	l       *ledger
	seq     atomic.Int64
	locks   [64]sync.Mutex // one edit of an object at a time
	rng     *rand.Rand
	rngMu   sync.Mutex
	// late counts ticks no worker was free for.
	late atomic.Int64
	// quiet, when set, holds edits back: the paced soak makes none while
	// no replica may lead (see pacer).
	quiet *atomic.Bool
	// inflight is read-held by every edit, so that settle can wait for
	// those that began before quiet was set.
	inflight sync.RWMutex
}

// settle returns once every edit that may have missed quiet is done.
func (ld *load) settle() {
	ld.inflight.Lock()
	defer ld.inflight.Unlock()
}

// run paces the edits with a ticker and makes them on workers; it returns
// once every started edit is done.
func (ld *load) run(ctx context.Context) {
	jobs := make(chan int64, 64)
	var wg sync.WaitGroup
	for range max(4, int(ld.c.Rate)) {
		wg.Go(func() {
			for n := range jobs {
				ld.edit(ctx, n)
			}
		})
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / ld.c.Rate))
	defer tick.Stop()
	defer wg.Wait()
	defer close(jobs)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			select {
			case jobs <- ld.seq.Add(1):
			default:
				ld.late.Add(1)
			}
		}
	}
}

// pick draws a tenant and an object of it.
func (ld *load) pick() (*tenant, int, int) {
	ld.rngMu.Lock()
	defer ld.rngMu.Unlock()
	t := ld.tenants[ld.rng.IntN(len(ld.tenants))]
	return t, ld.rng.IntN(t.Objects), ld.rng.IntN(40)
}

// edit makes edit number n: every fortieth writes the tenant's Secret,
// the others edit an object as its role says.
func (ld *load) edit(ctx context.Context, n int64) {
	ld.inflight.RLock()
	defer ld.inflight.RUnlock()
	if ld.quiet != nil && ld.quiet.Load() {
		ld.l.count("edits held back during a process fault")
		return
	}
	t, i, dice := ld.pick()
	if dice == 0 {
		ld.writeSecret(ctx, t)
		return
	}
	k := objKey{Tenant: t.Name, Name: objectName(i)}
	h := fnv.New32a()
	_, _ = h.Write([]byte(k.Tenant + "/" + k.Name)) // never fails
	mu := &ld.locks[h.Sum32()%uint32(len(ld.locks))]
	mu.Lock()
	defer mu.Unlock()
	switch roleOf(i) {
	case roleMerge:
		key, val := fmt.Sprintf("SOAK_M%d", n), fmt.Sprintf("v%d", n)
		ld.update(ctx, k, "merge", func(cm *corev1.ConfigMap) { cm.Data[key] = val }, func(l *ledger) {
			l.merges[k] = append(l.merges[k], key+": "+val)
			l.made(k, "/data/"+key)
		})
	case roleAlert, roleHotfix:
		hotfix := roleOf(i) == roleHotfix
		val, what := fmt.Sprintf("a%d", n), "alert"
		if hotfix {
			val, what = fmt.Sprintf("h%d", n), "hotfix"
		}
		ld.update(ctx, k, what, func(cm *corev1.ConfigMap) {
			cm.Data["LEVEL"] = val
			if hotfix {
				metav1.SetMetaDataAnnotation(&cm.ObjectMeta, refluxv1.DefaultManualHotfixKey, refluxv1.DefaultManualHotfixValue)
			}
		}, func(l *ledger) { l.values[k] = val; l.made(k, "/data/LEVEL") })
	case roleDelete:
		ld.remove(ctx, k)
	}
}

// update writes one ConfigMap as `kubectl edit` does and notes it in the
// ledger with note when it succeeded; an edit whose outcome is unknown
// makes the object uncertain.
func (ld *load) update(ctx context.Context, k objKey, what string, mutate func(*corev1.ConfigMap), note func(*ledger)) {
	ld.l.mu.Lock()
	gone := ld.l.deleted[k]
	ld.l.mu.Unlock()
	if gone {
		return
	}
	cm := &corev1.ConfigMap{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Tenant, Name: k.Name}, cm); err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		mutate(cm)
		return env.Client.Update(ctx, cm, client.FieldOwner(editor))
	})
	ld.l.mu.Lock()
	defer ld.l.mu.Unlock()
	switch {
	case err == nil:
		note(ld.l)
		ld.l.counts[what]++
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err) || isReadFailure(err):
		ld.l.counts["not made"]++ // nothing was written
	default:
		ld.l.uncertain[k] = true
		ld.l.counts["uncertain"]++
	}
}

// isReadFailure reports errors of a GET or of a write the apiserver
// refused before storing it; retry.RetryOnConflict returns the last.
func isReadFailure(err error) bool {
	return apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsInvalid(err)
}

// remove deletes a delete-role object once.
func (ld *load) remove(ctx context.Context, k objKey) {
	ld.l.mu.Lock()
	gone := ld.l.deleted[k]
	ld.l.mu.Unlock()
	if gone {
		return
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Tenant, Name: k.Name}}
	err := env.Client.Delete(ctx, cm)
	ld.l.mu.Lock()
	defer ld.l.mu.Unlock()
	switch {
	case err == nil:
		ld.l.deleted[k] = true
		ld.l.made(k, refluxv1.WholeObjectPointer)
		ld.l.counts["delete"]++
	case apierrors.IsNotFound(err):
		ld.l.counts["not made"]++
	default:
		// It may be gone: a deleted object is checked for a record only
		// when the delete is known to have happened.
		ld.l.counts["uncertain"]++
	}
}

// writeSecret writes a fresh value into the tenant's Secret.
func (ld *load) writeSecret(ctx context.Context, t *tenant) {
	val := secretValue("soak-live-secret-")
	ld.l.mu.Lock()
	ld.l.secrets = append(ld.l.secrets, val) // noted first: a failed write may still have landed
	ld.l.mu.Unlock()
	s := &corev1.Secret{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: t.Name, Name: "creds"}, s); err != nil {
			return err
		}
		s.Data["TOKEN"] = []byte(val)
		return env.Client.Update(ctx, s, client.FieldOwner(editor))
	})
	if err == nil {
		ld.l.count("secret")
	} else {
		ld.l.count("uncertain")
	}
}
