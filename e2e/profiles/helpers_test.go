package profiles

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// app is one namespace with testdata/app pushed to its own repository and
// applied by a reverse-synced Kustomization, and a policy governing it.
type app struct {
	ns, repo string
	ks       *kustomizev1.Kustomization
}

// newApp sets up ns with testdata/app and waits for Flux to apply it.
// policy adjusts the ReverseSyncPolicy before it is created.
func newApp(t *testing.T, ns string, policy func(*refluxv1.ReverseSyncPolicy)) *app {
	t.Helper()
	return newAppFrom(t, ns, "testdata/app", policy)
}

// newAppFrom is newApp with the tree in dir.
func newAppFrom(t *testing.T, ns, dir string, policy func(*refluxv1.ReverseSyncPolicy)) *app {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	a := &app{ns: ns, repo: ns + ".git"}
	_, err := env.Git.PushDir(ctx, a.repo, dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	src, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "app", Namespace: ns, Repo: a.repo})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, src)).To(Succeed())
	a.ks, err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: "app", Namespace: ns, Source: src.Name, Path: "./", TargetNamespace: ns, Prune: true,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{"reflux.dev/profile-test": ns}
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, a.ks)).To(Succeed())
	p := &refluxv1.ReverseSyncPolicy{}
	p.Name, p.Namespace = "app", ns
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/profile-test": ns}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	if policy != nil {
		policy(p)
	}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	// A later test's reflux, under another profile, must not govern this
	// app: its policy may ask for what that profile cannot do.
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), p); err != nil {
			t.Errorf("deleting policy %s/%s: %v", p.Namespace, p.Name, err)
		}
	})
	return a
}

// kubectlEdit changes obj's live copy as `kubectl edit` would.
func kubectlEdit(g Gomega, obj client.Object, mutate func()) {
	ctx := context.Background()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	mutate()
	g.Expect(env.Client.Update(ctx, obj, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

// waitRecord waits for the Drift record of kind/name in ns to carry
// pointer, and returns it.
func waitRecord(g Gomega, ns, kind, name, pointer string) *refluxv1.Drift {
	var found *refluxv1.Drift
	g.Eventually(func() error {
		list := &refluxv1.DriftList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range list.Items {
			d := &list.Items[i]
			if d.Spec.Object.Kind != kind || d.Spec.Object.Name != name {
				continue
			}
			for _, f := range d.Spec.Fields {
				if f.Pointer == pointer {
					found = d
					return nil
				}
			}
			return fmt.Errorf("record %s has no field %s yet", d.Name, pointer)
		}
		return fmt.Errorf("no record for %s %s/%s yet", kind, ns, name)
	}, timeout, interval).Should(Succeed())
	return found
}

// records lists the Drift records of kind/name in ns.
func records(g Gomega, ns, kind, name string) []refluxv1.Drift {
	list := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []refluxv1.Drift
	for _, d := range list.Items {
		if d.Spec.Object.Kind == kind && d.Spec.Object.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// isHeld reports whether reflux's hold is on obj.
func isHeld(obj client.Object) bool { return testenv.Held(obj) }

// access is one question for SelfSubjectAccessReview.
type access struct {
	verb, group, resource, namespace string
}

func (a access) String() string {
	return fmt.Sprintf("%s %s.%s in %q", a.verb, a.resource, a.group, a.namespace)
}

// allowed asks the apiserver, as cfg's identity, whether it may do a.
func allowed(g Gomega, cfg *rest.Config, a access) bool {
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Namespace: a.namespace},
		}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return review.Status.Allowed
}

// scopeFlags are the Deployment flags that decide what reflux touches;
// the rest (addresses, leader election, logging) are the test's own.
var scopeFlags = []string{"--comparison=", "--secrets=", "--watch-namespaces=", "--watch-all-namespaces="}

// profile is what a test installs: config/<path> with kustomize
// Components (relative to config/) included, as a Flux Kustomization's
// spec.components includes them.
type profile struct {
	path       string
	components []string
}

func (p profile) String() string {
	if len(p.components) == 0 {
		return "config/" + p.path
	}
	return fmt.Sprintf("config/%s with %s", p.path, strings.Join(p.components, ", "))
}

// profileFlags returns the scope flags p's Deployment starts reflux with,
// in order (a repeated flag overrides the one before it), so the binary
// runs as the profile ships it.
func profileFlags(t *testing.T, p profile) []string {
	t.Helper()
	objs, err := env.RenderProfile(context.Background(), p.path, p.components...)
	if err != nil {
		t.Fatalf("rendering %s: %v", p, err)
	}
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" || obj.GetName() != "reflux-controller" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			break
		}
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		var out []string
		for _, a := range args {
			for _, f := range scopeFlags {
				if strings.HasPrefix(a, f) {
					out = append(out, a)
				}
			}
		}
		return out
	}
	t.Fatalf("%s has no reflux-controller Deployment", p)
	return nil
}

// startReflux runs the reflux binary as the ServiceAccount of p, with the
// profile Deployment's scope flags, and registers its log for the dump.
func startReflux(t *testing.T, name string, p profile) *testenv.RefluxProcess {
	t.Helper()
	logs = append(logs, filepath.Join(env.Dir, name+".log"))
	args := append([]string{"--log-level=debug", "--concurrent=2", "--artifact-retry-interval=2s", "--policy-retry-interval=2s"},
		profileFlags(t, p)...)
	t.Logf("reflux %s", strings.Join(args, " "))
	r, err := testenv.StartReflux(context.Background(), env, testenv.RefluxOptions{
		Name: name, Kubeconfig: testenv.ProfileUser(p.path, p.components...), Args: args,
	})
	if err != nil {
		t.Fatalf("starting reflux under %s: %v", p, err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("stopping reflux: %v", err)
		}
		// The next test installs its own profile over the same names.
		if err := env.UninstallProfile(context.Background(), p.path, p.components...); err != nil {
			t.Errorf("uninstalling %s: %v", p, err)
		}
	})
	return r
}

// forbidden returns the lines of reflux's log that report a request the
// apiserver refused.
func forbidden(g Gomega, name string) []string {
	var out []string
	for _, line := range readLog(g, name) {
		if strings.Contains(line, "forbidden") {
			out = append(out, line)
		}
	}
	return out
}

// readLog returns the lines of reflux's log.
func readLog(g Gomega, name string) []string {
	b, err := os.ReadFile(filepath.Join(env.Dir, name+".log"))
	g.Expect(err).NotTo(HaveOccurred())
	return strings.Split(string(b), "\n")
}
