package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestKitBuilds builds config/monitoring as `kubectl apply -k` would: the
// PrometheusRule, and the dashboard, byte for byte, in a ConfigMap that
// Grafana's sidecar picks up.
func TestKitBuilds(t *testing.T) {
	g := NewWithT(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "config", "monitoring"))
	g.Expect(err).NotTo(HaveOccurred())
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Resources()).To(HaveLen(2))

	kinds := map[string]string{}
	for _, r := range res.Resources() {
		kinds[r.GetKind()] = r.GetName()
		g.Expect(r.GetNamespace()).To(Equal("reflux-system"))
	}
	g.Expect(kinds).To(Equal(map[string]string{"PrometheusRule": "reflux", "ConfigMap": "reflux-grafana-dashboard"}))

	cm := res.Resources()[0]
	if cm.GetKind() != "ConfigMap" {
		cm = res.Resources()[1]
	}
	g.Expect(cm.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
	want, err := os.ReadFile(dashboardPath)
	g.Expect(err).NotTo(HaveOccurred())
	got := cm.GetDataMap()["reflux.json"]
	g.Expect(got).To(Equal(string(want)))
	g.Expect(json.Valid([]byte(got))).To(BeTrue())
}
