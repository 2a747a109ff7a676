package scale

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// scaleCase is one shape of tree: objects live objects split evenly over
// kustomizations Kustomizations.
type scaleCase struct {
	objects, kustomizations int
}

// The cases, in the order they run.
var cases = []scaleCase{
	{objects: 1000, kustomizations: 20},
	{objects: 10000, kustomizations: 100},
	{objects: 10000, kustomizations: 1},
}

// name is the sub-benchmark's name, which scripts reading the results key on.
func (c scaleCase) name() string {
	return fmt.Sprintf("objects=%d/kustomizations=%d", c.objects, c.kustomizations)
}

// perKs is how many objects one Kustomization applies.
func (c scaleCase) perKs() int { return c.objects / c.kustomizations }

// deploymentsPerKs is one Deployment in every 50 objects, at least one per
// Kustomization, so reflux runs two live informers as on a real cluster;
// the rest are ConfigMaps.
func (c scaleCase) deploymentsPerKs() int { return max(1, c.perKs()/50) }

func (c scaleCase) configMapsPerKs() int { return c.perKs() - c.deploymentsPerKs() }

// Names are derived from indexes so that the fixture, the edits and the
// waits agree without sharing state.
func ksName(k int) string          { return fmt.Sprintf("k%03d", k) }
func targetNamespace(k int) string { return fmt.Sprintf("scale-%03d", k) }
func configMapName(i int) string   { return fmt.Sprintf("settings-%05d", i) }
func deploymentName(i int) string  { return fmt.Sprintf("app-%03d", i) }

// writeTree writes one directory per Kustomization into root, each a
// kustomization.yaml and one multi-document resources.yaml: for the
// one-Kustomization case that is a single 10,000-document file, the way a
// base grows when a team keeps adding to it.
func writeTree(root string, c scaleCase) error {
	for k := range c.kustomizations {
		dir := filepath.Join(root, ksName(k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		files := map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - resources.yaml\n",
			"resources.yaml": resources(c, k),
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// resources is Kustomization k's multi-document file: its ConfigMaps, each
// with four keys, then its Deployments.
func resources(c scaleCase, k int) string {
	var b strings.Builder
	for i := range c.configMapsPerKs() {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  LOG_LEVEL: info
  OWNER: team-%03d
  REGION: eu-west-1
  VALUE: "git-%d"
`, configMapName(i), k, i)
	}
	for i := range c.deploymentsPerKs() {
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
              value: "git-%[2]d"
`, deploymentName(i), i)
	}
	return b.String()
}

// target names one live ConfigMap of the tree.
type target struct {
	Namespace, Name string
}

func (t target) String() string { return t.Namespace + "/" + t.Name }

// minEdits is the fewest live edits per case.
const minEdits = 40

// editTargets returns the ConfigMaps the case edits, max(minEdits,
// kustomizations) of them, all distinct: round-robin over the
// Kustomizations so every one of the first edits lands in a different
// one, and within a Kustomization at the middle of evenly spaced segments
// of its file, so edits reach deep into a long one as well as its head.
func editTargets(c scaleCase) []target {
	n := max(minEdits, c.kustomizations)
	perKs := (n + c.kustomizations - 1) / c.kustomizations
	out := make([]target, 0, n)
	for i := range n {
		k, slot := i%c.kustomizations, i/c.kustomizations
		j := (2*slot + 1) * c.configMapsPerKs() / (2 * perKs)
		out = append(out, target{Namespace: targetNamespace(k), Name: configMapName(j)})
	}
	return out
}
