package sidebyside

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// sizeCase is one tree: objects ConfigMaps split evenly over
// kustomizations Kustomizations, reconciled by kustomize-controller every
// fluxInterval.
type sizeCase struct {
	objects, kustomizations int
	fluxInterval            time.Duration
	// latency runs the detection-latency edits; burst the 1,000-edit burst.
	latency, burst bool
}

// cases run in this order, one environment each. 500 objects per
// Kustomization at most: krusty's build time grows with the square of a
// file's documents, and what is measured here is the watch, not the build.
// The 10,000-object case is for reflux's memory and processor time only:
// at a 1m interval kustomize-controller would re-apply 10,000 objects a
// minute and take both cores from what is measured, so it reconciles
// every 10m there.
var cases = []sizeCase{
	{objects: 1000, kustomizations: 10, fluxInterval: time.Minute, latency: true},
	{objects: 5000, kustomizations: 10, fluxInterval: time.Minute, burst: true},
	{objects: 10000, kustomizations: 20, fluxInterval: 10 * time.Minute},
}

func (c sizeCase) name() string {
	return fmt.Sprintf("objects=%d/kustomizations=%d", c.objects, c.kustomizations)
}

func (c sizeCase) perKs() int { return c.objects / c.kustomizations }

// Names are derived from indexes so the tree, the edits and the checks
// agree without sharing state.
func ksName(k int) string          { return fmt.Sprintf("k%03d", k) }
func targetNamespace(k int) string { return fmt.Sprintf("side-%03d", k) }
func configMapName(i int) string   { return fmt.Sprintf("settings-%05d", i) }

// gitValue is the VALUE git declares for ConfigMap i.
func gitValue(i int) string { return fmt.Sprintf("git-%d", i) }

// writeTree writes one directory per Kustomization into root: a
// kustomization.yaml and one multi-document resources.yaml.
func writeTree(root string, c sizeCase) error {
	for k := range c.kustomizations {
		dir := filepath.Join(root, ksName(k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		files := map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - resources.yaml\n",
			"resources.yaml":     resources(c, k),
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// resources is Kustomization k's file: perKs ConfigMaps of four keys each.
func resources(c sizeCase, k int) string {
	var b strings.Builder
	for i := range c.perKs() {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n"+
			"  LOG_LEVEL: info\n  OWNER: team-%03d\n  REGION: eu-west-1\n  VALUE: %q\n", configMapName(i), k, gitValue(i))
	}
	return b.String()
}

// target is one live ConfigMap of the tree.
type target struct {
	k, i int
}

func (t target) namespace() string { return targetNamespace(t.k) }
func (t target) name() string      { return configMapName(t.i) }
func (t target) String() string    { return t.namespace() + "/" + t.name() }

// The edits of each kind touch disjoint ConfigMaps, so that every edit is
// a new drift: kustomize-controller's revert edits take the first few of
// each Kustomization, reflux's latency edits the next, the burst the rest.
const (
	fluxEdits    = 5
	refluxEdits  = 20
	burstEdits   = 1000
	burstFirstCM = 100
)

// fluxTargets are the ConfigMaps of kustomize-controller's revert edits,
// one per Kustomization so that each waits on a reconcile of its own.
func fluxTargets(c sizeCase) []target {
	out := make([]target, 0, fluxEdits)
	for e := range fluxEdits {
		out = append(out, target{k: e % c.kustomizations, i: e / c.kustomizations})
	}
	return out
}

// refluxTargets are the ConfigMaps of reflux's latency edits.
func refluxTargets(c sizeCase) []target {
	out := make([]target, 0, refluxEdits)
	for e := range refluxEdits {
		out = append(out, target{k: e % c.kustomizations, i: 10 + e/c.kustomizations})
	}
	return out
}

// burstTargets are the burst's ConfigMaps, spread evenly over every
// Kustomization.
func burstTargets(c sizeCase) []target {
	out := make([]target, 0, burstEdits)
	for e := range burstEdits {
		out = append(out, target{k: e % c.kustomizations, i: burstFirstCM + e/c.kustomizations})
	}
	return out
}
