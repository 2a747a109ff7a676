package pullrequest

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// setConfig writes keys of the ledger's ConfigMap as `kubectl edit` does;
// an empty value removes its key.
func setConfig(g Gomega, ns string, data map[string]string) {
	cm := &corev1.ConfigMap{}
	editObject(g, ns, "ledger-config", cm, configEdit(cm, data))
}

// driftConfig is setConfig for an edit reflux holds: it returns once the
// edit is held and has outlived a reconcile of Flux (driftEdit).
func driftConfig(g Gomega, ns string, data map[string]string) {
	cm := &corev1.ConfigMap{}
	driftEdit(g, ns, "ledger-config", cm, configEdit(cm, data))
}

func configEdit(cm *corev1.ConfigMap, data map[string]string) func() {
	return func() {
		for k, v := range data {
			if v == "" {
				delete(cm.Data, k)
				continue
			}
			cm.Data[k] = v
		}
	}
}

// editObject edits ns/name as `kubectl edit` does (fixture.Edit).
func editObject(g Gomega, ns, name string, obj client.Object, mutate func()) {
	obj.SetNamespace(ns)
	obj.SetName(name)
	fixture.Edit(g, env.Client, "kubectl-edit", obj, mutate)
}

// driftEdit makes a live edit that reflux holds, and returns once the
// edit is held and has outlived a reconcile of the tenant's
// Kustomization (fixture.HeldEdit).
func driftEdit(g Gomega, ns, name string, obj client.Object, mutate func()) {
	obj.SetNamespace(ns)
	obj.SetName(name)
	ks := &kustomizev1.Kustomization{}
	ks.Namespace, ks.Name = ns, ns
	fixture.HeldEdit(g, env, env.Client, "kubectl-edit", ks, obj, mutate)
}

// refluxBranches lists the repository's branches under reflux's prefix.
func refluxBranches(g Gomega, repo string) []string {
	var out []struct {
		Name string `json:"name"`
	}
	g.Expect(gt.API(context.Background(), http.MethodGet, "/repos/reflux/"+repo+"/branches?limit=50", nil, &out)).To(Succeed())
	var names []string
	for _, b := range out {
		if strings.HasPrefix(b.Name, "reflux/") {
			names = append(names, b.Name)
		}
	}
	return names
}

// onlyPushed checks that every branch reflux pushed for the
// Kustomization in ns was commit: each push emits a BranchPushed event
// naming its commit. The write-back of a repository runs one at a time,
// so once commit's event is in, any earlier push's event is in too.
func onlyPushed(g Gomega, ns, commit string) {
	commits := func() []string {
		list := &corev1.EventList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Kustomization" && e.Reason == refluxv1.BranchPushedReason {
				out = append(out, e.Annotations["kustomize.toolkit.fluxcd.io/reflux-commit"])
			}
		}
		return out
	}
	g.Eventually(commits, timeout, interval).Should(ContainElement(commit))
	g.Expect(commits()).To(HaveEach(commit), "no other push was made")
}

func exists(*refluxv1.Drift) error { return nil }

// heldBy names the record holding the ledger object name; "" when it is
// not held.
func heldBy(g Gomega, ns, name string) string {
	var obj client.Object = &corev1.ConfigMap{}
	if name != "ledger-config" {
		obj = &appsv1.Deployment{}
	}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	a := obj.GetAnnotations()
	if a[refluxv1.ReconcileAnnotation] != refluxv1.ReconcileDisabled {
		return ""
	}
	return a[refluxv1.HeldByAnnotation]
}

// TestDismissedMergeRecordIsNeverProposed: a new flag dismissed the
// moment its record exists is never pushed; one dismissed after its branch
// was pushed leaves it, and its pull request is closed.
func TestDismissedMergeRecordIsNeverProposed(t *testing.T) {
	g := NewWithT(t)
	const name = "ledger-flag"
	ledgerTenant(t, name)
	setConfig(g, name, map[string]string{"BATCH_EXPORT": "true"})
	recordIn(g, name, "ledger-config", exists)
	dismiss(g, name, "ledger-config")
	rec := recordIn(g, name, "ledger-config", isState(refluxv1.DriftDismissed))
	g.Expect(rec.Status.Commit).To(BeEmpty())

	// Flux restored Git; a new flag reopens the record and is proposed.
	g.Eventually(func() map[string]string {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: name, Name: "ledger-config"}, cm)).To(Succeed())
		return cm.Data
	}, timeout, interval).ShouldNot(HaveKey("BATCH_EXPORT"))
	setConfig(g, name, map[string]string{"NIGHTLY_CLOSE": "true"})
	rec = recordIn(g, name, "ledger-config", withPullRequest)
	branch := rec.Status.Branch
	g.Expect(fileAt(g, name, branch, ledgerFile)).To(ContainSubstring("NIGHTLY_CLOSE"))
	g.Expect(fileAt(g, name, branch, ledgerFile)).NotTo(ContainSubstring("BATCH_EXPORT"))
	onlyPushed(g, name, rec.Status.Commit)
	g.Expect(refluxBranches(g, name)).To(Equal([]string{branch}), "the dismissed flag was never pushed")
	consistent(t, g, name)
	number := pullsIn(g, name, branch)[0].Number

	dismiss(g, name, "ledger-config")
	g.Eventually(func() string { return pullsIn(g, name, branch)[0].State }, timeout, interval).Should(Equal("closed"))
	g.Eventually(func() bool { return branchExists(name, branch) }, timeout, interval).Should(BeFalse())
	g.Expect(comments(g, name, number)).To(ContainElement(ContainSubstring("`/data/NIGHTLY_CLOSE`")))
	consistent(t, g, name)
}

// TestRevertedByHandResolvesAndReleases: an edit put back to Git's value
// by hand at once is Resolved (Reverted), released and never pushed; one
// put back after its branch was pushed leaves the branch, which is closed.
func TestRevertedByHandResolvesAndReleases(t *testing.T) {
	g := NewWithT(t)
	const name = "ledger-revert"
	ledgerTenant(t, name)
	rec := ""

	// At once: the revert follows the record within milliseconds.
	driftConfig(g, name, map[string]string{"LOG_LEVEL": "debug"})
	rec = recordIn(g, name, "ledger-config", exists).Name
	setConfig(g, name, map[string]string{"LOG_LEVEL": "info"})
	d := recordIn(g, name, "ledger-config", isState(refluxv1.DriftResolved))
	g.Expect(d.Status.Closed).NotTo(BeNil())
	g.Expect(d.Status.Closed.Reason).To(Equal(refluxv1.ClosedRevertedReason))
	g.Expect(d.Status.Closed.By).To(Equal("kubectl-edit"))
	g.Eventually(func() string { return heldBy(g, name, "ledger-config") }, timeout, interval).Should(BeEmpty(), "the hold is released")

	// After the push: the revert takes the change off the branch.
	driftConfig(g, name, map[string]string{"LOG_LEVEL": "warn"})
	d = recordIn(g, name, "ledger-config", func(d *refluxv1.Drift) error {
		if err := withPullRequest(d); err != nil {
			return err
		}
		if !strings.Contains(d.Spec.Fields[0].LiveValue, "warn") {
			return fmt.Errorf("live value %s", d.Spec.Fields[0].LiveValue)
		}
		return nil
	})
	g.Expect(d.Name).To(Equal(rec), "the same record, reopened")
	branch := d.Status.Branch
	// The first edit, reverted at once, was never pushed.
	onlyPushed(g, name, d.Status.Commit)
	consistent(t, g, name)
	g.Expect(heldBy(g, name, "ledger-config")).To(Equal(rec))
	setConfig(g, name, map[string]string{"LOG_LEVEL": "info"})
	recordIn(g, name, "ledger-config", isState(refluxv1.DriftResolved))
	g.Eventually(func() string { return heldBy(g, name, "ledger-config") }, timeout, interval).Should(BeEmpty())
	g.Eventually(func() bool { return branchExists(name, branch) }, timeout, interval).Should(BeFalse(), "the change left the branch")
	g.Expect(pullsIn(g, name, branch)[0].State).To(Equal("closed"))
	consistent(t, g, name)

	// Two fields of one object, one put back: that field leaves the record
	// and the branch, the other stays proposed and held.
	main := fileAt(g, name, "main", ledgerFile)
	driftDeployment(g, name, "ledger-batch", func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr(int32(2))
		d.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
	})
	both := recordIn(g, name, "ledger-batch", func(d *refluxv1.Drift) error {
		if err := withPullRequest(d); err != nil {
			return err
		}
		if len(d.Spec.Fields) != 2 {
			return fmt.Errorf("%d fields", len(d.Spec.Fields))
		}
		return nil
	})
	twoFields := strings.Replace(strings.Replace(main, "memory: 128Mi", "memory: 1Gi", 1),
		"  name: ledger-batch\nspec:\n  replicas: 1", "  name: ledger-batch\nspec:\n  replicas: 2", 1)
	g.Eventually(func() string { return fileAt(g, name, both.Status.Branch, ledgerFile) }, timeout, interval).Should(Equal(twoFields))
	editDeployment(g, name, "ledger-batch", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(1)) })
	one := recordIn(g, name, "ledger-batch", func(d *refluxv1.Drift) error {
		if len(d.Spec.Fields) != 1 || d.Status.State != refluxv1.DriftProposed {
			return fmt.Errorf("%d fields, %s", len(d.Spec.Fields), d.Status.State)
		}
		return nil
	})
	g.Expect(one.Spec.Fields[0].Pointer).To(Equal("/spec/template/spec/containers/0/resources/limits/memory"))
	g.Eventually(func() string { return fileAt(g, name, one.Status.Branch, ledgerFile) }, timeout, interval).
		Should(Equal(strings.Replace(main, "memory: 128Mi", "memory: 1Gi", 1)), "the reverted field left the branch")
	g.Expect(heldBy(g, name, "ledger-batch")).To(Equal(one.Name), "the rest is still held")
	consistent(t, g, name)
}

// consistent waits until the records of the Kustomization in ns and
// reflux's branches in its Gitea repository agree (issue 17 §4).
func consistent(t *testing.T, g Gomega, ns string) {
	t.Helper()
	k := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ns}, k)).To(Succeed())
	fixture.Consistent(t, g, env, k, fixture.Proposals{
		Branches: func() []string { return refluxBranches(g, ns) },
		Clone: func(branch string) (string, error) {
			u, err := url.Parse(gt.URL + "/reflux/" + ns + ".git")
			if err != nil {
				return "", err
			}
			u.User = url.UserPassword(gt.Username, gt.Password)
			dir, err := os.MkdirTemp(t.TempDir(), "branch-")
			if err != nil {
				return "", err
			}
			out, err := exec.Command("git", "clone", "-q", "--branch", branch, u.String(), dir).CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("git clone %s: %w: %s", branch, err, out)
			}
			return dir, nil
		},
	})
}

// recordIn waits until the one record of the object name in namespace
// satisfies match.
func recordIn(g Gomega, namespace, name string, match func(*refluxv1.Drift) error) *refluxv1.Drift {
	return fixture.Namespace{Env: env, Name: namespace}.WaitRecord(g, "", name, match)
}

// TestFluxApplyAcrossTheHoldKeepsTheChange: kustomize-controller reads an
// object, the live edit and reflux's hold land, then Flux's apply (which
// was already under way) puts Git's values back with force. Nobody
// reverted the change by choice: the record stays open with its
// proposal, and the hold, which protects nothing now, is released.
// Before, the record was closed as Reverted and its branch deleted, and
// the live change was lost without a trace.
func TestFluxApplyAcrossTheHoldKeepsTheChange(t *testing.T) {
	g := NewWithT(t)
	const name = "ledger-crossed"
	ledgerTenant(t, name)
	driftConfig(g, name, map[string]string{"LOG_LEVEL": "debug"})
	proposed := recordIn(g, name, "ledger-config", withPullRequest)
	g.Expect(heldBy(g, name, "ledger-config")).To(Equal(proposed.Name))

	// Flux's apply as it reaches the apiserver: Git's object, with the
	// labels kustomize-controller sets, as its field owner, with force.
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: name, Name: "ledger-config"}, cm)).To(Succeed())
	data := maps.Clone(cm.Data)
	data["LOG_LEVEL"] = "info"
	ac := corev1ac.ConfigMap("ledger-config", name).WithLabels(cm.Labels).WithData(data)
	g.Expect(env.Client.Apply(context.Background(), ac, client.FieldOwner("kustomize-controller"), client.ForceOwnership)).To(Succeed())

	g.Eventually(func() string { return heldBy(g, name, "ledger-config") }, timeout, interval).Should(BeEmpty(), "the hold is released")
	d := recordIn(g, name, "ledger-config", func(d *refluxv1.Drift) error {
		if d.Status.HeldSince != nil {
			return fmt.Errorf("still held since %s", d.Status.HeldSince)
		}
		return nil
	})
	g.Expect(d.Status.Closed).To(BeNil(), "the change is not closed as reverted")
	g.Expect(d.Status.State).To(Equal(refluxv1.DriftProposed))
	g.Expect(d.Status.Branch).To(Equal(proposed.Status.Branch))
	g.Expect(d.Spec.Fields).To(HaveLen(1))
	g.Expect(d.Spec.Fields[0].LiveValue).To(ContainSubstring("debug"), "the record keeps the lost live value")
	g.Expect(branchExists(name, d.Status.Branch)).To(BeTrue())
	g.Expect(pullsIn(g, name, d.Status.Branch)[0].State).To(Equal("open"))
	consistent(t, g, name)
}
