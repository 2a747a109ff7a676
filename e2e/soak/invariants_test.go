package soak

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// verdict is one evaluation of the invariants: what breaks them, and the
// figures they are counted in.
type verdict struct {
	problems []string
	// held, released: edited objects reflux holds, and those whose hold
	// it released because Flux's apply, already under way, undid the
	// change (the record keeps it as evidence).
	held, released, recorded int
	// deletes and deletesRecorded: objects deleted live, and those a
	// record says so of.
	deletes, deletesRecorded int
	// flags: Merge flags found in Git, of those written.
	flags, flagsWritten int
	// prs and branches reflux opened and pushed, over every tenant.
	prs, openPRs int
	// byObject are the ledger's timed edits by object.
	byObject map[objKey][]timedEdit
}

func (v *verdict) fail(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// check evaluates every invariant once, over the ledger and the reviewed
// tenants.
func (s *soak) check(ctx context.Context) *verdict {
	v := &verdict{byObject: map[objKey][]timedEdit{}}
	s.ld.l.mu.Lock()
	defer s.ld.l.mu.Unlock()
	for _, e := range s.ld.l.timed {
		v.byObject[e.Key] = append(v.byObject[e.Key], e)
	}
	for _, t := range s.tenants {
		if err := s.checkTenant(ctx, t, v); err != nil {
			v.fail("%s: %v", t.Name, err)
		}
	}
	for _, r := range s.reviews {
		c, err := s.w.clone(r.Name)
		if err != nil {
			v.fail("%s: %v", r.Name, err)
			continue
		}
		prs, err := s.w.pulls(ctx, r.Name)
		if err == nil {
			err = s.w.checkReview(ctx, r, c, prs)
		}
		if err == nil {
			err = onePRPerBranch(prs, v)
		}
		if err != nil {
			v.fail("%v", err)
		}
		c.remove()
	}
	return v
}

// checkTenant checks one load tenant: live, in Git, and written once.
func (s *soak) checkTenant(ctx context.Context, t *tenant, v *verdict) error {
	list := &refluxv1.DriftList{}
	if err := env.Client.List(ctx, list, client.InNamespace(t.Name)); err != nil {
		return err
	}
	records := map[string][]*refluxv1.Drift{}
	for i := range list.Items {
		d := &list.Items[i]
		records[d.Spec.Object.Name] = append(records[d.Spec.Object.Name], d)
	}
	cms := &corev1.ConfigMapList{}
	if err := env.Client.List(ctx, cms, client.InNamespace(t.Name)); err != nil {
		return err
	}
	live := map[string]*corev1.ConfigMap{}
	for i := range cms.Items {
		live[cms.Items[i].Name] = &cms.Items[i]
	}
	for i := range t.Objects {
		k := objKey{Tenant: t.Name, Name: objectName(i)}
		if err := s.checkObject(k, records[objectName(i)], live[objectName(i)], v); err != nil {
			// Which gap it may be: edits made while no replica led.
			n, _ := s.fig.whileLeaderless(v.byObject[k])
			v.fail("%s/%s: %v [%d of its %d edits made while no replica led] %s", t.Name, objectName(i), err, n, len(v.byObject[k]),
				s.fig.editTimes(v.byObject[k]))
		}
	}
	c, err := s.w.clone(t.Name)
	if err != nil {
		return err
	}
	defer c.remove()
	flags, err := c.flags()
	if err != nil {
		return err
	}
	for k, keys := range s.ld.l.merges {
		if k.Tenant != t.Name {
			continue
		}
		for _, key := range keys {
			v.flagsWritten++
			if flags[key] {
				v.flags++
			} else {
				v.fail("%s/%s: Merge flag %q is on no branch", k.Tenant, k.Name, key)
			}
		}
	}
	prs, err := s.w.pulls(ctx, t.Name)
	if err != nil {
		return err
	}
	return onePRPerBranch(prs, v)
}

// onePRPerBranch fails a branch with more than one open pull request.
func onePRPerBranch(prs []pr, v *verdict) error {
	open := map[string]int{}
	for _, p := range prs {
		v.prs++
		if p.State == "open" {
			open[p.Head.Ref]++
			v.openPRs++
		}
	}
	for b, n := range open {
		if n > 1 {
			return fmt.Errorf("%d open pull requests for branch %s", n, b)
		}
	}
	return nil
}

// checkObject checks one object against what the load did to it: a
// change Flux would revert is recorded, every field of it, and held
// while it is live.
func (s *soak) checkObject(k objKey, recs []*refluxv1.Drift, cm *corev1.ConfigMap, v *verdict) error {
	l := s.ld.l
	var pointers []string
	var live func(*corev1.ConfigMap) bool // whether the last edit is live
	switch {
	case l.deleted[k]:
		v.deletes++
		for _, d := range recs {
			for _, f := range d.Spec.Fields {
				if f.DeletesObject() {
					v.deletesRecorded++
					return nil
				}
			}
		}
		return fmt.Errorf("deleted live, and no record says so (%d records)", len(recs))
	case len(l.merges[k]) > 0:
		for _, m := range l.merges[k] {
			key, _, _ := strings.Cut(m, ": ")
			pointers = append(pointers, "/data/"+key)
		}
		live = func(cm *corev1.ConfigMap) bool {
			for _, m := range l.merges[k] {
				key, val, _ := strings.Cut(m, ": ")
				if cm.Data[key] == val {
					return true
				}
			}
			return false
		}
	case l.values[k] != "":
		pointers = []string{"/data/LEVEL"}
		live = func(cm *corev1.ConfigMap) bool { return cm.Data["LEVEL"] == l.values[k] }
	default:
		return nil // never edited, or only uncertainly
	}
	var open []*refluxv1.Drift
	for _, d := range recs {
		if d.Status.Closed == nil {
			open = append(open, d)
		}
	}
	if len(open) != 1 {
		return fmt.Errorf("%d open records, want 1", len(open))
	}
	for _, p := range pointers {
		if _, err := fixture.Field(open[0], p); err != nil {
			return err
		}
	}
	v.recorded++
	switch {
	case cm == nil:
		return errors.New("gone live, though never deleted")
	case fixture.Held(cm):
		v.held++
	case live(cm) && !l.uncertain[k]:
		return fmt.Errorf("its change is live and not held: Flux will revert it (record %s is %s)", open[0].Name, open[0].Status.State)
	default:
		v.released++
	}
	return nil
}

// leaks returns where any Secret value of the soak appears: a value
// written live anywhere in Git, a value Git declares in a commit reflux
// made, or either in a reflux log, an event or a record.
func (s *soak) leaks(ctx context.Context) ([]string, error) {
	live := append([]string(nil), s.ld.l.secrets...)
	var fromGit []string
	for _, t := range s.tenants {
		fromGit = append(fromGit, t.GitSecret)
	}
	var found []string
	look := func(where, text string, values []string) {
		for _, val := range values {
			for _, form := range []string{val, base64.StdEncoding.EncodeToString([]byte(val))} {
				if strings.Contains(text, form) {
					found = append(found, fmt.Sprintf("a Secret value in %s", where))
				}
			}
		}
	}
	for _, t := range s.tenants {
		c, err := s.w.clone(t.Name)
		if err != nil {
			return nil, err
		}
		all, offMain, err := c.history()
		c.remove()
		if err != nil {
			return nil, err
		}
		look("the history of "+t.Name, all, live)
		look("reflux's commits to "+t.Name, offMain, fromGit)
	}
	logs, err := filepath.Glob(filepath.Join(env.Dir, "reflux-*.log"))
	if err != nil {
		return nil, err
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		look(filepath.Base(p), string(b), append(live, fromGit...))
	}
	events := &corev1.EventList{}
	records := &refluxv1.DriftList{}
	for _, list := range []client.ObjectList{events, records} {
		if err := env.Client.List(ctx, list); err != nil {
			return nil, err
		}
	}
	for what, obj := range map[string]any{"an event": events, "a Drift record": records} {
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		look(what, string(b), append(live, fromGit...))
	}
	return found, nil
}
