package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/report"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// watchTimeout bounds the waits on a reflector, whose retries back off
// up to 30s.
const watchTimeout = time.Minute

func TestAccessReportsEachChangeOnce(t *testing.T) {
	g := NewWithT(t)
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	var logged []string
	var changed []schema.GroupVersionKind
	a := &access{
		changed: func(k schema.GroupVersionKind) { changed = append(changed, k) },
		log: func(err *WatchForbiddenError, allowed bool) {
			if allowed {
				logged = append(logged, "allowed "+err.Verb)
			} else {
				logged = append(logged, "refused "+err.Verb)
			}
		},
	}
	refused := func(verb string) error {
		return &WatchForbiddenError{GVK: gvk, Verb: verb, Err: errors.New("forbidden")}
	}
	ctx := context.Background()
	a.allowed() // nothing was refused: nothing to say
	a.onWatchError(ctx, nil, refused("list"))
	a.onWatchError(ctx, nil, refused("list")) // the reflector's retry
	g.Expect(a.refused()).To(HaveField("Verb", "list"))
	a.onWatchError(ctx, nil, refused("watch")) // list granted, watch not yet
	a.allowed()
	a.allowed()
	g.Expect(a.refused()).To(BeNil())
	g.Expect(logged).To(Equal([]string{"refused list", "refused watch", "allowed watch"}))
	g.Expect(changed).To(Equal([]schema.GroupVersionKind{gvk, gvk, gvk}))
}

type ignoreLive struct{}

func (ignoreLive) OnLiveAdd(schema.GroupVersionKind, *unstructured.Unstructured, time.Time) {}

func (ignoreLive) OnLiveUpdate(schema.GroupVersionKind, *unstructured.Unstructured, *unstructured.Unstructured, time.Time) {
}
func (ignoreLive) OnLiveDelete(schema.GroupVersionKind, *unstructured.Unstructured) {}

// TestWatcherReportsForbiddenWatch runs a Watcher against the real
// apiserver as a user RBAC grants nothing: its ConfigMap watch is refused,
// reported by Forbidden and to the access callback, and not Synced, until
// a RoleBinding grants it; then the informer syncs and the report clears.
func TestWatcherReportsForbiddenWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, user = "default", "reflux-watcher"
	u, err := testEnv.ControlPlane.AddUser(envtest.User{Name: user}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	dyn, err := dynamic.NewForConfig(u.Config())
	g.Expect(err).NotTo(HaveOccurred())
	w := NewWatcher(dyn, k8sClient.RESTMapper(), WatcherOptions{Namespaces: []string{ns}, Log: logr.Discard()})
	w.Handle(ignoreLive{})
	changed := make(chan types.NamespacedName, 8)
	w.OnAccessChange(func(ks types.NamespacedName) {
		select {
		case changed <- ks:
		default:
		}
	})
	ks := types.NamespacedName{Namespace: ns, Name: "app"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	g.Expect(w.Watches(schema.GroupResource{Resource: "configmaps"})).To(BeFalse())
	g.Expect(w.ListedFor(ks)).To(BeFalse(), "a Kustomization not watched yet has listed nothing")
	g.Expect(w.Ensure(ks, []schema.GroupVersionKind{cm})).To(Succeed())
	t.Cleanup(w.Stop)
	// What the audit webhook keeps: the watched kind's resource, by the
	// name the audit log gives it.
	g.Expect(w.Watches(schema.GroupResource{Resource: "configmaps"})).To(BeTrue())
	g.Expect(w.Watches(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"})).To(BeFalse())

	g.Eventually(changed).WithTimeout(watchTimeout).Should(Receive(Equal(ks)))
	denied := w.Forbidden(ks)
	g.Expect(denied).To(HaveLen(1))
	g.Expect(denied[0].GVK).To(Equal(cm))
	g.Expect(denied[0].Resource).To(Equal(schema.GroupResource{Resource: "configmaps"}))
	g.Expect(denied[0].Namespace).To(Equal(ns))
	g.Expect(denied[0].Verb).To(BeElementOf("list", "watch"))
	g.Expect(denied[0].Err).To(MatchError(ContainSubstring(`User "reflux-watcher" cannot`)))
	g.Expect(w.Synced(cm)).To(BeFalse())
	g.Expect(w.ListedFor(ks)).To(BeTrue(), "a refused watch has nothing more to list: a standby waits for it no longer")
	g.Expect(w.Forbidden(types.NamespacedName{Namespace: ns, Name: "other"})).To(BeEmpty(), "only the Kustomizations using the kind")

	for len(changed) > 0 {
		<-changed // what the refusal said; the grant must say its own
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
	}
	g.Eventually(func() bool { return w.Synced(cm) }).WithTimeout(watchTimeout).Should(BeTrue(), "the granted informer lists")
	g.Eventually(func() []*WatchForbiddenError { return w.Forbidden(ks) }).WithTimeout(watchTimeout).Should(BeEmpty())
	g.Eventually(changed).WithTimeout(watchTimeout).Should(Receive(Equal(ks)))
}

func TestWatchForbiddenErrorSaysTheFix(t *testing.T) {
	g := NewWithT(t)
	secrets := &WatchForbiddenError{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"},
		Resource: schema.GroupResource{Resource: "secrets"}, Verb: "watch", Err: errors.New("forbidden")}
	g.Expect(secrets.Error()).To(Equal("reflux may not watch secrets (kind Secret): reading Secrets is opt-in, include config/components/secrets"))
	g.Expect(errors.Unwrap(secrets)).To(MatchError("forbidden"))

	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	refused := apierrors.NewForbidden(gr, "", errors.New(`User "reflux" cannot list resource "widgets"`))
	var denied *WatchForbiddenError
	g.Expect(errors.As(forbiddenAs(refused, "list", gvk, gr, "team-a"), &denied)).To(BeTrue())
	g.Expect(*denied).To(Equal(WatchForbiddenError{GVK: gvk, Resource: gr, Namespace: "team-a", Verb: "list", Err: refused}))
	gone := apierrors.NewNotFound(gr, "")
	g.Expect(forbiddenAs(gone, "list", gvk, gr, "")).To(BeIdenticalTo(error(gone)), "other errors are client-go's to handle")
	g.Expect(forbiddenAs(nil, "watch", gvk, gr, "")).To(Succeed())
}

// TestWatchForbiddenInDriftedCondition: a refused watch reaches the
// Kustomization's Drifted condition with its fix, over the drift of the
// kinds reflux does watch, and after a permission the tenant lacks.
func TestWatchForbiddenInDriftedCondition(t *testing.T) {
	widgets := &WatchForbiddenError{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Resource: schema.GroupResource{Group: "example.com", Resource: "widgets"}, Namespace: "team-a", Verb: "list"}
	secrets := &WatchForbiddenError{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"},
		Resource: schema.GroupResource{Resource: "secrets"}, Verb: "watch"}
	open := refluxv1.Drift{}
	open.Spec.Fields = []refluxv1.DriftField{{Pointer: "/spec/replicas", Severity: refluxv1.SeverityLow, Action: refluxv1.AlertAction}}
	current := governor.Status{Current: true, Checked: true}
	g := NewWithT(t)
	c := report.Drifted(report.DriftedInput{Applied: "main@sha1:1", Engine: current, Open: []refluxv1.Drift{open},
		WatchDenied: []error{widgets, secrets}})
	g.Expect(string(c.Status) + "/" + c.Reason).To(Equal("Unknown/WatchForbidden"))
	g.Expect(c.Message).To(ContainSubstring(`reflux may not list widgets.example.com (kind Widget) in namespace team-a: grant get, list, watch and patch ` +
		`on it in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true" (and 1 more refused watch(es)); ` +
		`the other kinds are watched: 1 field(s) in 1 object(s) drifted`))

	denied := governor.Status{Current: true, Checked: true,
		Denied: []governor.Denial{{Object: "ConfigMap/team-b/shared", Err: &tenancy.ForbiddenError{}}}}
	c = report.Drifted(report.DriftedInput{Applied: "main@sha1:1", Engine: denied, WatchDenied: []error{widgets}})
	g.Expect(c.Reason).To(Equal(refluxv1.ImpersonationForbiddenReason), "the tenant's missing permission comes first")
}
