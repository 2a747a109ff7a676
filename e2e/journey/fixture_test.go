package journey

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// fixture is one namespace with its own repository, GitRepository,
// Kustomizations and ReverseSyncPolicy.
type fixture struct {
	name string
	repo string
	src  *sourcev1.GitRepository
	ks   map[string]*kustomizev1.Kustomization
	// head is the commit pushed to main.
	head string
	// key signs the policy's commits when the fixture is signed.
	key testenv.SigningKey
}

// fixtureOptions shape a fixture.
type fixtureOptions struct {
	// dir is pushed as the repository's content; files are written over it.
	dir   string
	files map[string]string
	// paths names each Kustomization and its spec.path; default one named
	// after the fixture at "./".
	paths map[string]string
	// shard labels the fixture for a reflux of its own.
	shard string
	// reportOnly policies never write Git; signed ones sign with an
	// OpenPGP key of the fixture's.
	reportOnly, signed bool
	// resync makes Flux poll the repository and reconcile every few
	// seconds, for journeys through a merge; otherwise only the test's
	// own reconciles run Flux.
	resync bool
	// rules are the policy's rules, before the built-in defaults.
	rules []refluxv1.Rule
	// customize changes the policy before it is created.
	customize func(*refluxv1.ReverseSyncPolicy)
}

// newFixture pushes the tree, lets Flux apply it, creates the policy and
// waits until reflux reports every Kustomization clean.
func newFixture(t *testing.T, name string, o fixtureOptions) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	f := &fixture{name: name, repo: name + ".git", ks: map[string]*kustomizev1.Kustomization{}}
	var err error
	f.head, err = env.Git.PushDir(ctx, f.repo, tree(t, o))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.CreateNamespace(ctx, name)).To(Succeed())
	srcInterval, ksInterval := time.Hour, time.Hour
	if o.resync {
		srcInterval, ksInterval = 2*time.Second, 3*time.Second
	}
	f.src, err = env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: name, Namespace: name, Repo: f.repo,
		Interval: srcInterval})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, f.src)).To(Succeed())
	labels := map[string]string{"reflux.dev/journey": name}
	if o.shard != "" {
		labels[shardKey] = o.shard
	}
	if o.paths == nil {
		o.paths = map[string]string{name: "./"}
	}
	for ksName, path := range o.paths {
		f.ks[ksName], err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
			Name: ksName, Namespace: name, Source: name, Path: path, TargetNamespace: name, Prune: true,
			Interval: ksInterval,
			Customize: func(k *kustomizev1.Kustomization) {
				k.Labels = labels
				k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
			},
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(env.WaitForReady(ctx, f.ks[ksName])).To(Succeed())
	}
	g.Expect(env.Client.Create(ctx, f.policy(g, labels, o))).To(Succeed())
	for ksName := range f.ks {
		f.waitClean(g, ksName)
	}
	return f
}

// tree writes the fixture's repository content to a temporary directory.
func tree(t *testing.T, o fixtureOptions) string {
	g := NewWithT(t)
	dir := t.TempDir()
	if o.dir != "" {
		g.Expect(os.CopyFS(dir, os.DirFS(o.dir))).To(Succeed())
	}
	for path, body := range o.files {
		p := filepath.Join(dir, path)
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
	}
	return dir
}

func (f *fixture) policy(g Gomega, labels map[string]string, o fixtureOptions) *refluxv1.ReverseSyncPolicy {
	p := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: f.name, Labels: labels}}
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/journey": f.name}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.ReportOnly = o.reportOnly
	p.Spec.Rules = o.rules
	if o.signed {
		var err error
		f.key, err = testenv.NewSigningKey("reflux", "e2e", "reflux@example.com")
		g.Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "reflux-signing-key", Namespace: f.name},
			Data: map[string][]byte{"git.asc": f.key.Private}}
		g.Expect(env.Client.Create(context.Background(), secret)).To(Succeed())
		p.Spec.Git.SigningKey = &refluxv1.SigningKey{Type: refluxv1.OpenPGPSigningKey}
		p.Spec.Git.SigningKey.SecretRef.Name = secret.Name
	}
	if o.customize != nil {
		o.customize(p)
	}
	return p
}

// only returns the fixture's single Kustomization.
func (f *fixture) only() *kustomizev1.Kustomization {
	if len(f.ks) != 1 {
		panic(fmt.Sprintf("fixture %s has %d Kustomizations", f.name, len(f.ks)))
	}
	for _, k := range f.ks {
		return k
	}
	return nil
}

// waitClean waits until reflux reports the Kustomization clean: rendered,
// watched and every object checked.
func (f *fixture) waitClean(g Gomega, ksName string) {
	g.Eventually(func() string {
		return f.condition(g, ksName, refluxv1.DriftedCondition)
	}, 3*time.Minute, interval).Should(HavePrefix("False/" + refluxv1.NoDriftReason))
}

// condition returns "status/reason: message" of one of a Kustomization's
// conditions.
func (f *fixture) condition(g Gomega, ksName, typ string) string {
	k := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.name, Name: ksName}, k)).To(Succeed())
	c := conditions.Get(k, typ)
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// get reads a live object of the fixture.
func (f *fixture) get(g Gomega, name string, obj client.Object) client.Object {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.name, Name: name}, obj)).To(Succeed())
	return obj
}

// records lists the fixture's records of kind/name.
func (f *fixture) records(g Gomega, kind, name string) []refluxv1.Drift {
	list := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(f.name))).To(Succeed())
	var out []refluxv1.Drift
	for _, d := range list.Items {
		if d.Spec.Object.Kind == kind && d.Spec.Object.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// waitRecord waits until the one record of kind/name satisfies match.
func (f *fixture) waitRecord(g Gomega, kind, name string, match func(*refluxv1.Drift) error) *refluxv1.Drift {
	var found *refluxv1.Drift
	g.Eventually(func() error {
		recs := f.records(g, kind, name)
		switch len(recs) {
		case 0:
			return fmt.Errorf("no record for %s %s/%s yet", kind, f.name, name)
		case 1:
			found = &recs[0]
			return match(found)
		default:
			return StopTrying(fmt.Sprintf("%d records for %s %s/%s", len(recs), kind, f.name, name))
		}
	}, timeout, interval).Should(Succeed())
	return found
}

// event waits for a Kubernetes Event of reason on a Kustomization of the
// fixture whose message contains contains.
func (f *fixture) event(g Gomega, reason, contains string) *corev1.Event {
	var found *corev1.Event
	g.Eventually(func() error {
		list := &corev1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(f.name)); err != nil {
			return err
		}
		for i := range list.Items {
			e := &list.Items[i]
			if e.InvolvedObject.Kind == kustomizev1.KustomizationKind && e.Reason == reason && strings.Contains(e.Message, contains) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("no %s event mentioning %q in %s", reason, contains, f.name)
	}, timeout, interval).Should(Succeed())
	return found
}

func inState(want refluxv1.DriftState) func(*refluxv1.Drift) error {
	return func(d *refluxv1.Drift) error {
		if d.Status.State != want {
			return fmt.Errorf("record %s is %q, want %q", d.Name, d.Status.State, want)
		}
		return nil
	}
}

func proposed(d *refluxv1.Drift) error {
	if d.Status.State != refluxv1.DriftProposed || d.Status.Commit == "" {
		return fmt.Errorf("record %s is %q with commit %q, want a pushed proposal", d.Name, d.Status.State, d.Status.Commit)
	}
	return nil
}

func field(d *refluxv1.Drift, pointer string) (refluxv1.DriftField, error) {
	var have []string
	for _, f := range d.Spec.Fields {
		if f.Pointer == pointer {
			return f, nil
		}
		have = append(have, f.Pointer)
	}
	return refluxv1.DriftField{}, fmt.Errorf("record %s has no field %s (has %s)", d.Name, pointer, strings.Join(have, ", "))
}

func hasField(pointer string) func(*refluxv1.Drift) error {
	return func(d *refluxv1.Drift) error {
		_, err := field(d, pointer)
		return err
	}
}

func isHeld(obj client.Object) bool { return testenv.Held(obj) }

// reconcile makes kustomize-controller reconcile a Kustomization now and
// waits for it.
func (f *fixture) reconcile(g Gomega, ksName string) {
	g.Expect(env.Reconcile(context.Background(), f.ks[ksName])).To(Succeed())
}

// metric reads the series of name with labels from one scrape of r's
// /metrics over HTTP.
func metric(g Gomega, r *testenv.RefluxProcess, name string, labels map[string]string) (float64, bool) {
	m, err := r.Metrics(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	f, ok := m[name]
	if !ok {
		return 0, false
	}
	for _, s := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range s.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		switch {
		case s.Gauge != nil:
			return s.GetGauge().GetValue(), true
		case s.Counter != nil:
			return s.GetCounter().GetValue(), true
		case s.Histogram != nil:
			return float64(s.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}
