package livepath

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

const (
	timeout  = 2 * time.Minute
	interval = 100 * time.Millisecond
)

// fixture is one namespace with its own repository, GitRepository,
// Kustomization and policy.
type fixture struct {
	name string
	src  *sourcev1.GitRepository
	ks   *kustomizev1.Kustomization
}

// fixtureOptions shape a fixture.
type fixtureOptions struct {
	// files is the repository's content; the Kustomization applies ".".
	files map[string]string
	// url replaces the git server's URL (a StallProxy's).
	url string
	// sourceInterval is the GitRepository's; default 1h.
	sourceInterval time.Duration
	// labels go on the Kustomization and the policy (a shard key).
	labels map[string]string
	// reportOnly policies never write Git.
	reportOnly bool
}

// newFixture pushes the files, lets Flux apply them and waits until reflux
// reports the Kustomization clean.
func newFixture(t *testing.T, name string, o fixtureOptions) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	for path, body := range o.files {
		p := filepath.Join(dir, path)
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
	}
	repo := name + ".git"
	_, err := env.Git.PushDir(ctx, repo, dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.CreateNamespace(ctx, name)).To(Succeed())
	if o.sourceInterval == 0 {
		o.sourceInterval = time.Hour
	}
	f := &fixture{name: name}
	f.src, err = env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: name, Namespace: name, Repo: repo,
		Interval: o.sourceInterval, URL: o.url})
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"reflux.dev/fixture": name}
	for k, v := range o.labels {
		labels[k] = v
	}
	f.ks, err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: name, Namespace: name, Source: name, Path: "./", TargetNamespace: name, Prune: true,
		// Only the test's own reconciles run Flux.
		Interval: time.Hour,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = labels
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, f.src)).To(Succeed())
	g.Expect(env.WaitForReady(ctx, f.ks)).To(Succeed())
	p := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name, Labels: o.labels}}
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/fixture": name}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.ReportOnly = o.reportOnly
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	f.waitClean(g)
	return f
}

// waitClean waits until reflux reports the Kustomization clean: rendered,
// watched and every object checked.
func (f *fixture) waitClean(g Gomega) {
	g.Eventually(func() string {
		return f.condition(g, refluxv1.DriftedCondition)
	}, 5*time.Minute, interval).Should(HavePrefix("False/" + refluxv1.NoDriftReason))
}

// condition returns "status/reason: message" of one of the
// Kustomization's conditions.
func (f *fixture) condition(g Gomega, typ string) string {
	k := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.ks), k)).To(Succeed())
	c := conditions.Get(k, typ)
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// configMap reads a live ConfigMap of the fixture.
func (f *fixture) configMap(g Gomega, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.name, Name: name}, cm)).To(Succeed())
	return cm
}

// addKey adds a data key the way `kubectl edit` by alice does.
func (f *fixture) addKey(g Gomega, name, key, value string) {
	cm := f.configMap(g, name)
	cm.Data[key] = value
	g.Expect(alice.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

// record returns the Drift record of a ConfigMap, nil when there is none.
func (f *fixture) record(g Gomega, name string) *refluxv1.Drift {
	list := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(f.name))).To(Succeed())
	for i := range list.Items {
		if list.Items[i].Spec.Object.Kind == "ConfigMap" && list.Items[i].Spec.Object.Name == name {
			return &list.Items[i]
		}
	}
	return nil
}

// waitRecord waits until a ConfigMap's record satisfies match.
func (f *fixture) waitRecord(g Gomega, name string, match func(*refluxv1.Drift) error) *refluxv1.Drift {
	var found *refluxv1.Drift
	g.Eventually(func() error {
		found = f.record(g, name)
		if found == nil {
			return fmt.Errorf("no record for ConfigMap %s/%s yet", f.name, name)
		}
		return match(found)
	}, timeout, interval).Should(Succeed())
	return found
}

func state(want refluxv1.DriftState) func(*refluxv1.Drift) error {
	return func(d *refluxv1.Drift) error {
		if d.Status.State != want {
			return fmt.Errorf("record %s is %q, want %q", d.Name, d.Status.State, want)
		}
		return nil
	}
}

func held(cm *corev1.ConfigMap) bool { return testenv.Held(cm) }

// configMaps renders n ConfigMaps with four keys each, as one
// multi-document file a base grows into.
func configMaps(n int, value string) string {
	var out []byte
	for i := range n {
		out = fmt.Appendf(out, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\ndata:\n"+
			"  LOG_LEVEL: info\n  REGION: eu-west-1\n  OWNER: team-%d\n  VALUE: %q\n", i, i%7, fmt.Sprintf("%s-%d", value, i))
	}
	return string(out)
}

const kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmaps.yaml\n"
