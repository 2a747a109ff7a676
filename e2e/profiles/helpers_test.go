package profiles

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// newApp pushes dir (testdata/app when empty) to a repository of ns of
// its own and waits for Flux to apply it, governed by a policy that
// policy adjusts. A later test's reflux, under another profile, must not
// govern the app: its policy may ask for what that profile cannot do, so
// the policy goes when the test ends.
func newApp(t *testing.T, ns, dir string, policy func(*refluxv1.ReverseSyncPolicy)) *fixture.App {
	t.Helper()
	if dir == "" {
		dir = "testdata/app"
	}
	a := fixture.NewApp(t, env, ns, fixture.AppOptions{Dir: dir, Policy: policy, Unwatched: true})
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), a.Policy); err != nil {
			t.Errorf("deleting policy %s/%s: %v", a.Policy.Namespace, a.Policy.Name, err)
		}
	})
	return a
}

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

// expectAccess checks, as cfg's identity, that each of what ("verb
// resource[.group]", as `kubectl auth can-i` spells it) is allowed in ns
// when want, and refused when not.
func expectAccess(g Gomega, cfg *rest.Config, want bool, ns string, what ...string) {
	for _, w := range what {
		verb, resource, _ := strings.Cut(w, " ")
		resource, group, _ := strings.Cut(resource, ".")
		a := access{verb, group, resource, ns}
		g.Expect(allowed(g, cfg, a)).To(Equal(want), "%s", a)
	}
}

// editHeld edits obj as `kubectl edit` does and waits until reflux has
// recorded the field at pointer and held obj.
func editHeld(g Gomega, a *fixture.App, obj client.Object, pointer string, mutate func()) {
	fixture.KubectlEdit(g, env.Client, obj, mutate)
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		gvk, err := apiutil.GVKForObject(obj, env.Scheme)
		g.Expect(err).NotTo(HaveOccurred())
		kind = gvk.Kind
	}
	a.WaitRecord(g, kind, obj.GetName(), fixture.HasField(pointer))
	g.Eventually(func() bool {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return fixture.Held(obj)
	}, timeout, interval).Should(BeTrue(), "%s is held", obj.GetName())
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
// profile Deployment's scope flags, and uninstalls p when the test ends.
func startReflux(t *testing.T, name string, p profile) *testenv.RefluxProcess {
	t.Helper()
	// Registered first, so it runs once reflux has stopped. The next test
	// installs its own profile over the same names.
	t.Cleanup(func() {
		if err := env.UninstallProfile(context.Background(), p.path, p.components...); err != nil {
			t.Errorf("uninstalling %s: %v", p, err)
		}
	})
	args := profileFlags(t, p)
	t.Logf("reflux %s", strings.Join(args, " "))
	return fixture.StartReflux(t, env, fixture.Options{Name: name, Kubeconfig: testenv.ProfileUser(p.path, p.components...), Args: args})
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
