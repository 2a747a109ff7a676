package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The fleet: kustomizations directories of objectsPerKs objects each, the
// last deploymentsPerKs of them Deployments and the rest ConfigMaps, so the
// engine runs two live informers as it would on a real cluster.
const (
	kustomizations   = 20
	objectsPerKs     = 50
	deploymentsPerKs = 5
	configMapsPerKs  = objectsPerKs - deploymentsPerKs
)

// ksName, targetNamespace and the object names are derived from indexes so
// that the fixture and the benchmark agree without sharing state.
func ksName(k int) string          { return fmt.Sprintf("k%02d", k) }
func targetNamespace(k int) string { return fmt.Sprintf("bench-%02d", k) }
func configMapName(i int) string   { return fmt.Sprintf("settings-%02d", i) }
func deploymentName(i int) string  { return fmt.Sprintf("app-%d", i) }

// writeFleet writes one directory per Kustomization into root.
func writeFleet(root string) error {
	for k := range kustomizations {
		dir := filepath.Join(root, ksName(k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		files := map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - configmaps.yaml\n  - deployments.yaml\n",
			"configmaps.yaml":  configMaps(),
			"deployments.yaml": deployments(),
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func configMaps() string {
	docs := make([]string, 0, configMapsPerKs)
	for i := range configMapsPerKs {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  LOG_LEVEL: info
  VALUE: "git-%d"
`, configMapName(i), i))
	}
	return strings.Join(docs, "---\n")
}

func deployments() string {
	docs := make([]string, 0, deploymentsPerKs)
	for i := range deploymentsPerKs {
		docs = append(docs, fmt.Sprintf(`apiVersion: apps/v1
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
`, deploymentName(i), i))
	}
	return strings.Join(docs, "---\n")
}
