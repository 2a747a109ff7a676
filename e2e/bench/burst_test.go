package bench

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

const (
	// burstWorkers is how many edits are in flight at once. At 50, 1,000
	// edits took 2.0 s against the local apiserver on 2 cores; the issue
	// asks for them in about a second. 150 stays under the apiserver's
	// default of 200 mutating requests in flight, so none is refused.
	burstWorkers = 150
	// burstTimeout bounds the wait for every edit to be held, recorded
	// and written to a branch.
	burstTimeout = 10 * time.Minute
)

// burstValue is the VALUE edit e of the burst writes.
func burstValue(run string, e int) string { return fmt.Sprintf("burst-%s-%d", run, e) }

// burst makes every edit at once, burstWorkers at a time, each a merge
// patch of VALUE under field manager kubectl-edit (as `kubectl patch`
// would), calls acked with each edit's index and the moment the apiserver
// answered it, and returns how long sending them all took.
func burst(ctx context.Context, c client.Client, targets []target, run string, acked func(int, time.Time)) (time.Duration, error) {
	work := make(chan int)
	errs := make(chan error, len(targets))
	var wg sync.WaitGroup
	began := time.Now()
	for range burstWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range work {
				t := targets[e]
				cm := &corev1.ConfigMap{}
				cm.Namespace, cm.Name = t.Namespace, t.Name
				patch := fmt.Appendf(nil, `{"data":{"VALUE":%q}}`, burstValue(run, e))
				if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-edit")); err != nil {
					errs <- fmt.Errorf("editing %s: %w", t, err)
					continue
				}
				acked(e, time.Now())
			}
		}()
	}
	for e := range targets {
		work <- e
	}
	close(work)
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		return took, err
	}
	return took, nil
}

// burstLive polls until every edit is held and its open record (Held, or
// Proposed once its branch is pushed) carries the edited value, or burstTimeout passes, and returns the edits still
// missing either.
func burstLive(ctx context.Context, c client.Client, targets []target, run string) ([]string, error) {
	var missing []string
	// The deadline is checked here rather than given to the poll: a List
	// cut short by the poll's own deadline fails with the rate limiter's
	// error instead of reporting what is still missing.
	deadline := time.Now().Add(burstTimeout)
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		var drifts refluxv1.DriftList
		if err := c.List(ctx, &drifts); err != nil {
			return false, err
		}
		var live []corev1.ConfigMap
		for _, ns := range distinctNamespaces(targets) {
			var cms corev1.ConfigMapList
			if err := c.List(ctx, &cms, client.InNamespace(ns)); err != nil {
				return false, err
			}
			live = append(live, cms.Items...)
		}
		missing = burstMissing(drifts.Items, live, targets, run)
		return len(missing) == 0 || time.Now().After(deadline), nil
	})
	return missing, err
}

// burstMissing returns the targets whose burst edit is not both held, in
// live, and recorded by an open record (Held, or Proposed once its branch
// is pushed) carrying the edited value.
func burstMissing(drifts []refluxv1.Drift, live []corev1.ConfigMap, targets []target, run string) []string {
	recorded := map[string]bool{}
	for _, d := range drifts {
		if d.Status.State != refluxv1.DriftHeld && d.Status.State != refluxv1.DriftProposed {
			continue
		}
		for _, f := range d.Spec.Fields {
			recorded[target{d.Spec.Object.Kind, d.Spec.Object.Namespace, d.Spec.Object.Name}.String()+"="+f.LiveValue] = true
		}
	}
	held := map[target]bool{}
	for i := range live {
		if fixture.Held(&live[i]) {
			held[target{"ConfigMap", live[i].Namespace, live[i].Name}] = true
		}
	}
	var missing []string
	for e, t := range targets {
		if !held[t] || !recorded[fmt.Sprintf("%s=%q", t, burstValue(run, e))] {
			missing = append(missing, t.String())
		}
	}
	return missing
}

func distinctNamespaces(targets []target) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range targets {
		if !seen[t.Namespace] {
			seen[t.Namespace] = true
			out = append(out, t.Namespace)
		}
	}
	return out
}

// gitOutcome is what the burst left in the repository.
type gitOutcome struct {
	// commits counts, per Kustomization, the commits on its reflux
	// branches that are not on main.
	commits map[string]int
	// branches counts the Kustomizations' reflux branches.
	branches int
	// missing are the edits no branch of their Kustomization carries.
	missing []string
}

// burstGit polls the bare repository until every Kustomization has a
// branch carrying all of its edits, or burstTimeout passes.
func burstGit(ctx context.Context, repoDir string, c tree, targets []target, run string) (gitOutcome, error) {
	var out gitOutcome
	deadline := time.Now().Add(burstTimeout)
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(context.Context) (bool, error) {
		var err error
		out, err = readBranches(repoDir, c, targets, run)
		return err == nil && (len(out.missing) == 0 || time.Now().After(deadline)), err
	})
	return out, err
}

// readBranches reads every reflux branch of the tree's Kustomizations.
func readBranches(repoDir string, c tree, targets []target, run string) (gitOutcome, error) {
	out := gitOutcome{commits: map[string]int{}}
	repo, err := gogit.PlainOpen(repoDir)
	if err != nil {
		return out, err
	}
	main, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return out, err
	}
	refs, err := repo.References()
	if err != nil {
		return out, err
	}
	files := map[string][]string{} // target namespace -> resources.yaml of each branch
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		for k := range c.kustomizations {
			prefix := "refs/heads/reflux/" + fluxNS + "-" + ksName(k) + "/"
			if !strings.HasPrefix(ref.Name().String(), prefix) {
				continue
			}
			out.branches++
			n, content, err := branchCommits(repo, ref.Hash(), main.Hash(), path.Join(ksName(k), "resources.yaml"))
			if err != nil {
				return err
			}
			out.commits[ksName(k)] += n
			files[c.namespace(k)] = append(files[c.namespace(k)], content)
		}
		return nil
	})
	for e, t := range targets {
		v := burstValue(run, e)
		if !containsValue(files[t.Namespace], v) {
			out.missing = append(out.missing, t.String())
		}
	}
	return out, err
}

// containsValue reports whether any of the files sets VALUE to v, quoted
// or plain (a suffix check would take burst-x-1 for burst-x-10).
func containsValue(files []string, v string) bool {
	for _, f := range files {
		if strings.Contains(f, `VALUE: "`+v+`"`) || strings.Contains(f, "VALUE: "+v+"\n") {
			return true
		}
	}
	return false
}

// branchCommits counts the commits from tip back to main and returns file
// as it is at tip.
func branchCommits(repo *gogit.Repository, tip, main plumbing.Hash, file string) (int, string, error) {
	n := 0
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{tip}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == main || seen[h] {
			continue
		}
		seen[h] = true
		cm, err := repo.CommitObject(h)
		if err != nil {
			return 0, "", err
		}
		n++
		queue = append(queue, cm.ParentHashes...)
	}
	cm, err := repo.CommitObject(tip)
	if err != nil {
		return 0, "", err
	}
	content, err := fileAt(cm, file)
	return n, content, err
}

func fileAt(cm *object.Commit, file string) (string, error) {
	f, err := cm.File(file)
	if err != nil {
		return "", fmt.Errorf("reading %s at %s: %w", file, cm.Hash, err)
	}
	return f.Contents()
}
