package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/kustomize"
)

const (
	fluxNS   = "flux-system"
	treeRepo = "tree.git"
	// treeLabel selects a tree's Kustomizations for its policy.
	treeLabel = "reflux.dev/bench"
)

// tree is the shape of a benchmark's repository: objects live objects
// split evenly over kustomizations Kustomizations, each a directory of a
// kustomization.yaml and one multi-document resources.yaml: its
// ConfigMaps, with four keys each, then deployments Deployments, so that
// reflux runs two live informers as on a real cluster. For one
// Kustomization that is a single file of every document, the way a base
// grows when a team keeps adding to it.
type tree struct {
	// prefix names the target namespaces, <prefix>-000 on.
	prefix                  string
	objects, kustomizations int
	// deployments is per Kustomization.
	deployments int
}

// name is the sub-benchmark's name, which scripts reading the results key on.
func (t tree) name() string {
	return fmt.Sprintf("objects=%d/kustomizations=%d", t.objects, t.kustomizations)
}

// perKs is how many objects one Kustomization applies.
func (t tree) perKs() int           { return t.objects / t.kustomizations }
func (t tree) configMapsPerKs() int { return t.perKs() - t.deployments }

// Names are derived from indexes so that the tree, the edits and the
// waits agree without sharing state.
func (t tree) namespace(k int) string { return fmt.Sprintf("%s-%03d", t.prefix, k) }
func ksName(k int) string             { return fmt.Sprintf("k%03d", k) }
func configMapName(i int) string      { return fmt.Sprintf("settings-%05d", i) }
func deploymentName(i int) string     { return fmt.Sprintf("app-%03d", i) }

// gitValue is the VALUE git declares for ConfigMap or Deployment i.
func gitValue(i int) string { return fmt.Sprintf("git-%d", i) }

// configMapIndex is the index configMapName gave name.
func configMapIndex(name string) (int, error) {
	var i int
	_, err := fmt.Sscanf(name, "settings-%05d", &i)
	return i, err
}

func (t tree) namespaces() []string {
	out := make([]string, 0, t.kustomizations)
	for k := range t.kustomizations {
		out = append(out, t.namespace(k))
	}
	return out
}

func (t tree) ksNames() []string {
	out := make([]string, 0, t.kustomizations)
	for k := range t.kustomizations {
		out = append(out, ksName(k))
	}
	return out
}

// files is the repository's content, path → content.
func (t tree) files() map[string]string {
	files := map[string]string{}
	for k := range t.kustomizations {
		files[ksName(k)+"/kustomization.yaml"] = fixture.Kustomization("resources.yaml")
		files[ksName(k)+"/resources.yaml"] = t.resources(k)
	}
	return files
}

// resources is Kustomization k's multi-document file.
func (t tree) resources(k int) string {
	var b strings.Builder
	for i := range t.configMapsPerKs() {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n"+
			"  LOG_LEVEL: info\n  OWNER: team-%03d\n  REGION: eu-west-1\n  VALUE: %q\n", configMapName(i), k, gitValue(i))
	}
	for i := range t.deployments {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
        - name: app
          image: ghcr.io/example/app:1.0.%[2]d
          env:
            - name: VALUE
              value: %[3]q
`, deploymentName(i), i, gitValue(i))
	}
	return b.String()
}

// push writes the tree, pushes it, creates the target namespaces and a
// GitRepository, and waits until source-controller has fetched it, so
// that what is timed next is kustomize-controller alone.
func (t tree) push(ctx context.Context, env *testenv.Env) error {
	dir, err := os.MkdirTemp("", "reflux-bench-tree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // scratch space
	if err := fixture.WriteTree(dir, t.files()); err != nil {
		return fmt.Errorf("writing the tree: %w", err)
	}
	if _, err := env.Git.PushDir(ctx, treeRepo, dir); err != nil {
		return err
	}
	for _, ns := range append([]string{fluxNS}, t.namespaces()...) {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			return err
		}
	}
	src, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{
		Name: "tree", Namespace: fluxNS, Repo: treeRepo, Interval: 6 * time.Hour,
	})
	if err != nil {
		return err
	}
	return env.WaitForReady(ctx, src)
}

// createKustomizations creates the tree's Kustomizations, reconciled every
// interval, opted in to reverse sync and labelled for the policy, without
// waiting for them.
func (t tree) createKustomizations(ctx context.Context, env *testenv.Env, interval time.Duration) ([]*kustomizev1.Kustomization, error) {
	var out []*kustomizev1.Kustomization
	for k := range t.kustomizations {
		ks, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
			Name: ksName(k), Namespace: fluxNS, Source: "tree", Path: "./" + ksName(k),
			TargetNamespace: t.namespace(k), Prune: true, Interval: interval,
			Customize: func(ks *kustomizev1.Kustomization) {
				ks.Labels = map[string]string{treeLabel: "tree"}
				ks.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
				// Flux's default timeout is the interval; say so, as the
				// apply of 10,000 objects takes minutes.
				ks.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
			},
		})
		if err != nil {
			return nil, err
		}
		out = append(out, ks)
	}
	return out, nil
}

// apply pushes the tree and waits until kustomize-controller has applied
// every Kustomization.
func (t tree) apply(ctx context.Context, env *testenv.Env, interval time.Duration) error {
	if err := t.push(ctx, env); err != nil {
		return err
	}
	all, err := t.createKustomizations(ctx, env, interval)
	if err != nil {
		return err
	}
	for _, ks := range all {
		if err := env.WaitForReady(ctx, ks); err != nil {
			return err
		}
	}
	return nil
}

// policy governs the tree with the built-in classification, which holds
// every drifted field; reportOnly ones push no branches.
func policy(reportOnly bool) *refluxv1.ReverseSyncPolicy {
	p := fixture.Policy(fluxNS, "tree", map[string]string{treeLabel: "tree"})
	p.Spec.Git.ReportOnly = reportOnly
	return p
}

// target names one live object of a tree.
type target struct {
	Kind, Namespace, Name string
}

func (t target) String() string { return t.Kind + "/" + t.Namespace + "/" + t.Name }

// configMap is ConfigMap i of Kustomization k.
func (t tree) configMap(k, i int) target {
	return target{Kind: "ConfigMap", Namespace: t.namespace(k), Name: configMapName(i)}
}

// TestCaseNames pins the sub-benchmark names scripts key on.
func TestCaseNames(t *testing.T) {
	g := NewWithT(t)
	var scale, side []string
	for _, c := range scaleCases {
		scale = append(scale, c.name())
	}
	for _, c := range sideCases {
		side = append(side, c.name())
	}
	g.Expect(scale).To(Equal([]string{
		"objects=1000/kustomizations=20", "objects=10000/kustomizations=100", "objects=10000/kustomizations=1",
	}))
	g.Expect(side).To(Equal([]string{
		"objects=1000/kustomizations=10", "objects=5000/kustomizations=10", "objects=10000/kustomizations=20",
	}))
}

// TestTreeBuilds renders the first Kustomization of every benchmark's
// tree as Flux would and counts what it applies: its share of the
// objects, ConfigMaps of four keys with git's VALUE, its Deployments.
// krusty's resource map is quadratic in a file's documents (a
// 10,000-document file takes minutes), so a tree of more than 1,000
// objects per Kustomization is built at a tenth of its size; its file is
// checked by counting documents.
func TestTreeBuilds(t *testing.T) {
	trees := append([]tree{fleet}, scaleCases...)
	for _, c := range sideCases {
		trees = append(trees, c.tree)
	}
	for _, c := range trees {
		t.Run(c.prefix+"/"+c.name(), func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(c.perKs() * c.kustomizations).To(Equal(c.objects))
			built := c
			if c.perKs() > 1000 {
				built = tree{prefix: c.prefix, objects: c.objects / 10, kustomizations: c.kustomizations, deployments: c.deployments / 10}
				doc := c.resources(0)
				g.Expect(strings.Count(doc, "\nkind: ConfigMap\n")).To(Equal(c.configMapsPerKs()))
				g.Expect(strings.Count(doc, "\nkind: Deployment\n")).To(Equal(c.deployments))
			}
			root := t.TempDir()
			g.Expect(fixture.WriteTree(root, built.files())).To(Succeed())
			entries, err := os.ReadDir(root)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entries).To(HaveLen(c.kustomizations))

			res, err := kustomize.Build(context.Background(), kustomize.BuildOptions{Root: root, Path: ksName(0)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Objects).To(HaveLen(built.perKs()))
			deployments := 0
			for _, o := range res.Objects {
				switch o.GetKind() {
				case "ConfigMap":
					data, _, _ := unstructured.NestedStringMap(o.Object, "data")
					g.Expect(data).To(HaveLen(4), o.GetName())
					i, err := configMapIndex(o.GetName())
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(data).To(HaveKeyWithValue("VALUE", gitValue(i)), o.GetName())
				case "Deployment":
					deployments++
				}
			}
			g.Expect(deployments).To(Equal(built.deployments))
		})
	}
}
