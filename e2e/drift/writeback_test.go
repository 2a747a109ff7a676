package drift

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// gitURL is the payments repository's URL with credentials, for the git CLI
// playing the reviewer.
func gitURL() string {
	u, _ := url.Parse(env.Git.HTTPURL(wbRepo))
	u.User = url.UserPassword(env.Git.Username, env.Git.Password)
	return u.String()
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func remoteBranches(t *testing.T) string {
	return git(t, "", "ls-remote", "--heads", gitURL())
}

func wbConfigMap(g Gomega, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: wbNS, Name: name}, cm)).To(Succeed())
	return cm
}

func wbRecord(g Gomega, name string, match func(*refluxv1.Drift) error) *refluxv1.Drift {
	var found *refluxv1.Drift
	g.Eventually(func() error {
		list := &refluxv1.DriftList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(wbNS)); err != nil {
			return err
		}
		for i := range list.Items {
			if list.Items[i].Spec.Object.Name == name {
				found = &list.Items[i]
				return match(found)
			}
		}
		return fmt.Errorf("no record for %s", name)
	}, timeout, interval).Should(Succeed())
	return found
}

// TestMergeDriftBecomesASignedBranchAndResolvesOnMerge follows a new flag
// from `kubectl edit` to a signed branch, through a reviewer's merge and
// Flux applying it, to the record resolving and reflux deleting its branch.
func TestMergeDriftBecomesASignedBranchAndResolvesOnMerge(t *testing.T) {
	g := NewWithT(t)
	cm := wbConfigMap(g, "payment-flags")
	cm.Data["INSTANT_REFUNDS"] = "true"
	editAsAlice(g, cm, "kubectl-edit")

	rec := wbRecord(g, "payment-flags", func(d *refluxv1.Drift) error {
		if d.Status.State != refluxv1.DriftProposed || d.Status.Commit == "" {
			return fmt.Errorf("state %q commit %q", d.Status.State, d.Status.Commit)
		}
		return nil
	})
	branch := rec.Status.Branch
	g.Expect(branch).To(HavePrefix("reflux/payments-payments/"))
	g.Expect(isHeld(wbConfigMap(g, "payment-flags"))).To(BeTrue(), "a proposed drift stays held")

	k := wbKs.DeepCopy()
	g.Eventually(func() string {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k)
		if c := conditions.Get(k, refluxv1.ReverseSyncedCondition); c != nil && c.Status == "True" {
			return c.Message
		}
		return ""
	}, timeout, interval).Should(ContainSubstring(branch), "BranchPushed, then UpToDate at the next resync")
	ev := wbEvent(g, refluxv1.BranchPushedReason)
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-branch", branch))
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-commit", rec.Status.Commit))

	// The policy lists the branch as pending review.
	p := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() []refluxv1.PendingBranch {
		_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: wbNS, Name: "payments"}, p)
		return p.Status.PendingBranches
	}, timeout, interval).Should(ContainElement(HaveField("Branch", branch)))

	// The branch holds one signed commit with the minimal edit, comments kept.
	dir := t.TempDir()
	git(t, "", "clone", "-q", "-b", branch, gitURL(), dir)
	flags, err := os.ReadFile(filepath.Join(dir, "base/flags.yaml"))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(flags)).To(ContainSubstring("  # keep the old provider as fallback\n  FALLBACK_PROVIDER: \"true\"\n  INSTANT_REFUNDS: \"true\"\n"))
	g.Expect(git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("base/flags.yaml"))
	g.Expect(git(t, dir, "log", "-1", "--format=%B")).To(ContainSubstring("/data/INSTANT_REFUNDS"))
	verifyWithGPG(t, dir)

	// A reviewer merges the branch; Flux applies the new revision.
	git(t, dir, "checkout", "-q", "main")
	git(t, dir, "-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.com", "merge", "-q", "--no-ff", "-m", "Merge reflux branch", branch)
	git(t, dir, "push", "-q", "origin", "main")

	wbRecord(g, "payment-flags", func(d *refluxv1.Drift) error {
		if d.Status.State != refluxv1.DriftResolved {
			return fmt.Errorf("state %q", d.Status.State)
		}
		return nil
	})
	g.Eventually(func() bool { return isHeld(wbConfigMap(g, "payment-flags")) }, timeout, interval).Should(BeFalse())
	g.Expect(wbConfigMap(g, "payment-flags").Data).To(HaveKeyWithValue("INSTANT_REFUNDS", "true"))
	// reflux deletes its merged branch.
	g.Eventually(func() string { return remoteBranches(t) }, timeout, interval).ShouldNot(ContainSubstring(branch))
}

// TestDeletedBranchDismissesTheDrift: a reviewer closes the proposal by
// deleting its branch; the hold goes and Flux restores Git's value.
func TestDeletedBranchDismissesTheDrift(t *testing.T) {
	g := NewWithT(t)
	cm := wbConfigMap(g, "search-flags")
	cm.Data["SEMANTIC_SEARCH"] = "true"
	editAsAlice(g, cm, "kubectl-edit")
	rec := wbRecord(g, "search-flags", func(d *refluxv1.Drift) error {
		if d.Status.State != refluxv1.DriftProposed {
			return fmt.Errorf("state %q", d.Status.State)
		}
		return nil
	})
	git(t, "", "push", "-q", gitURL(), "--delete", rec.Status.Branch)

	wbRecord(g, "search-flags", func(d *refluxv1.Drift) error {
		if d.Status.State != refluxv1.DriftDismissed {
			return fmt.Errorf("state %q", d.Status.State)
		}
		return nil
	})
	g.Eventually(func() map[string]string { return wbConfigMap(g, "search-flags").Data }, timeout, interval).
		ShouldNot(HaveKey("SEMANTIC_SEARCH"), func() string {
			cm := wbConfigMap(g, "search-flags")
			var out []string
			for _, mf := range cm.ManagedFields {
				out = append(out, fmt.Sprintf("%s/%s %s", mf.Manager, mf.Operation, mf.FieldsV1.String()))
			}
			return "Flux restored Git's value; managedFields: " + strings.Join(out, " | ") + fmt.Sprintf(" annotations %v", cm.Annotations)
		})
	g.Expect(isHeld(wbConfigMap(g, "search-flags"))).To(BeFalse())
}

// verifyWithGPG checks the head commit's signature with the real git and
// gpg binaries, in a throwaway keyring holding the policy's public key.
func verifyWithGPG(t *testing.T, dir string) {
	t.Helper()
	home := t.TempDir()
	key := filepath.Join(home, "reflux.asc")
	if err := os.WriteFile(key, wbPublicKey, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("gpg", "--batch", "--import", key)
	out := run("git", "verify-commit", "-v", "HEAD")
	if !strings.Contains(out, "Good signature") {
		t.Fatalf("git verify-commit: %s", out)
	}
}

func wbEvent(g Gomega, reason string) *corev1.Event {
	var found *corev1.Event
	g.Eventually(func() error {
		list := &corev1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(wbNS)); err != nil {
			return err
		}
		for i := range list.Items {
			if list.Items[i].Reason == reason && list.Items[i].InvolvedObject.Kind == "Kustomization" {
				found = &list.Items[i]
				return nil
			}
		}
		return fmt.Errorf("no %s event", reason)
	}, timeout, interval).Should(Succeed())
	return found
}
