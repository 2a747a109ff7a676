package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// sampleReport is two drifted objects as diffKustomization reports them:
// a scaled Deployment whose replicas an overlay's patch sets, an image
// rolled back, a memory limit raised 8x, a deleted ConfigMap, and a
// generated name refused with where to edit instead.
func sampleReport() diffReport {
	deploy := []refluxv1.DriftField{
		{Pointer: "/spec/replicas", ChangeType: refluxv1.ChangeUpdate, LiveValue: "7", GitValue: "4", FluxReverts: true,
			Origin: &refluxv1.FieldOrigin{File: "apps/podinfo/deployment.yaml", Line: 6, Column: 13, Kind: "resource"},
			Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, Rule: "replicas-merge"},
		{Pointer: "/spec/template/spec/containers/0/image", ChangeType: refluxv1.ChangeUpdate,
			LiveValue: `"ghcr.io/stefanprodan/podinfo:6.5.0"`, GitValue: `"ghcr.io/stefanprodan/podinfo:6.7.1"`, FluxReverts: true,
			Origin: &refluxv1.FieldOrigin{File: "apps/podinfo/kustomization.yaml", Line: 9, Column: 14, Kind: "images"},
			Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh},
		{Pointer: "/spec/template/spec/containers/0/resources/limits/memory", ChangeType: refluxv1.ChangeUpdate,
			LiveValue: `"2Gi"`, GitValue: `"256Mi"`, FluxReverts: true,
			Origin: &refluxv1.FieldOrigin{File: "apps/podinfo/deployment.yaml", Line: 24, Column: 23, Kind: "resource"},
			Action: refluxv1.AlertAction, Severity: refluxv1.SeverityCritical},
		{Pointer: "/spec/template/spec/volumes/0/configMap/name", ChangeType: refluxv1.ChangeUpdate,
			LiveValue: `"podinfo-config-abc"`, GitValue: `"podinfo-config-5kbd4d49tk"`, FluxReverts: true,
			Origin: &refluxv1.FieldOrigin{Refused: "hash-suffix", EditAt: "apps/podinfo/kustomization.yaml:12:11"},
			Action: refluxv1.AlertAction, Severity: refluxv1.SeverityMedium},
	}
	cm := []refluxv1.DriftField{{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeRemove, FluxReverts: true,
		Origin: &refluxv1.FieldOrigin{File: "apps/podinfo/flags.yaml", Line: 4, Column: 9, Kind: "resource"},
		Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh}}
	return diffReport{Kustomization: "flux-system/apps", Revision: "artifact main@sha1:4f2a9c1", Applied: "main@sha1:4f2a9c1",
		Policy: "apps", Compared: 5, Encrypted: 1, Objects: []objectDiff{
			{Kustomization: "flux-system/apps", Object: "Deployment/podinfo/podinfo", APIVersion: "apps/v1", Fields: fieldsOf(deploy),
				Excluded: "reconcile: disabled"},
			{Kustomization: "flux-system/apps", Object: "ConfigMap/podinfo/podinfo-flags", APIVersion: "v1", Fields: fieldsOf(cm)},
		}}
}

// TestPrintDiffText is the text output, aligned as flux prints tables.
func TestPrintDiffText(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(printDiff(&out, false, sampleReport())).To(Succeed())
	const golden = "testdata/diff.golden"
	if *updateGolden {
		g.Expect(os.WriteFile(golden, out.Bytes(), 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(golden)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.String()).To(Equal(string(want)))
}

// TestPrintDiffNoDrift says how many objects were compared.
func TestPrintDiffNoDrift(t *testing.T) {
	g := NewWithT(t)
	r := sampleReport()
	r.Objects, r.Policy, r.Encrypted = nil, "", 0
	var out bytes.Buffer
	g.Expect(printDiff(&out, false, r)).To(Succeed())
	g.Expect(out.String()).To(Equal("# Kustomization flux-system/apps, artifact main@sha1:4f2a9c1 against the live cluster" +
		" (applied: main@sha1:4f2a9c1), policy none (default rules)\n# no drift in 5 object(s)\n"))
}

// TestPrintDiffJSON is one object per line, values whole.
func TestPrintDiffJSON(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(printDiff(&out, true, sampleReport())).To(Succeed())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(2))
	var first objectDiff
	g.Expect(json.Unmarshal([]byte(lines[0]), &first)).To(Succeed())
	g.Expect(first.Object).To(Equal("Deployment/podinfo/podinfo"))
	g.Expect(first.Fields).To(HaveLen(4))
	g.Expect(first.Fields[0]).To(Equal(diffField{Pointer: "/spec/replicas", Change: "Update", Live: "7", Git: "4",
		Origin: "apps/podinfo/deployment.yaml:6:13", Rule: "replicas-merge", Action: "Merge", Severity: "low", FluxReverts: true}))
	g.Expect(first.Fields[3].Refused).To(Equal("hash-suffix"))
	g.Expect(first.Fields[3].EditAt).To(Equal("apps/podinfo/kustomization.yaml:12:11"))
	g.Expect(lines[1]).To(ContainSubstring(`"pointer":"","change":"Remove"`))
}

func TestCell(t *testing.T) {
	g := NewWithT(t)
	g.Expect(cell("")).To(Equal("-"))
	g.Expect(cell("{\n  \"a\": 1\n}")).To(Equal(`{ "a": 1 }`))
	long := strings.Repeat("x", 50)
	g.Expect([]rune(cell(long))).To(HaveLen(maxCell))
	g.Expect(cell(long)).To(HaveSuffix("…"))
}
