package proposals

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

const flags = `apiVersion: v1
kind: ConfigMap
metadata:
  name: flags
data:
  A: "1"
  B: "1"
`

func tree(t *testing.T, data string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flags.yaml\n",
		"flags.yaml":         data,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func proposed(name, branch string, state refluxv1.DriftState, fields ...refluxv1.DriftField) refluxv1.Drift {
	d := refluxv1.Drift{}
	d.Name = name
	d.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "flags"}
	d.Spec.Fields = fields
	d.Status.State, d.Status.Branch, d.Status.Commit = state, branch, "c1"
	return d
}

func set(ptr, live string) refluxv1.DriftField {
	return refluxv1.DriftField{Pointer: ptr, ChangeType: refluxv1.ChangeUpdate, LiveValue: live, Action: refluxv1.AlertAction}
}

func TestCheck(t *testing.T) {
	main := tree(t, flags)
	both := tree(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: flags
data:
  A: "2"
  B: "2"
`)
	onlyA := tree(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: flags
data:
  A: "2"
  B: "1"
`)
	tests := []struct {
		name     string
		branches map[string]string
		records  []refluxv1.Drift
		want     []string
	}{
		{name: "the branch carries exactly its records", branches: map[string]string{"reflux/x": both},
			records: []refluxv1.Drift{proposed("a", "reflux/x", refluxv1.DriftProposed, set("/data/A", `"2"`)),
				proposed("b", "reflux/x", refluxv1.DriftProposed, set("/data/B", `"2"`))}},
		{name: "a dismissed record's edit still on the branch", branches: map[string]string{"reflux/x": both},
			records: []refluxv1.Drift{proposed("a", "reflux/x", refluxv1.DriftProposed, set("/data/A", `"2"`)),
				proposed("b", "reflux/x", refluxv1.DriftDismissed, set("/data/B", `"2"`))},
			want: []string{"changes ConfigMap//flags/data/B, which no Proposed record on it names"}},
		{name: "a Proposed record the branch does not carry", branches: map[string]string{"reflux/x": onlyA},
			records: []refluxv1.Drift{proposed("a", "reflux/x", refluxv1.DriftProposed, set("/data/A", `"2"`)),
				proposed("b", "reflux/x", refluxv1.DriftProposed, set("/data/B", `"2"`))},
			want: []string{`b is Proposed on reflux/x, which has ConfigMap//flags /data/B = 1, not the live "2"`}},
		{name: "a branch no record is on", branches: map[string]string{"reflux/x": onlyA},
			want: []string{"branch reflux/x exists, and no Proposed record is on it"}},
		{name: "an open record on a pushed branch that is not Proposed", branches: map[string]string{"reflux/x": onlyA},
			records: []refluxv1.Drift{proposed("a", "reflux/x", refluxv1.DriftProposed, set("/data/A", `"2"`)),
				proposed("b", "reflux/x", refluxv1.DriftHeld, set("/data/B", `"2"`))},
			want: []string{"record b names pushed branch reflux/x but is Held"}},
		{name: "a Proposed record on a branch that is gone",
			records: []refluxv1.Drift{proposed("a", "reflux/x", refluxv1.DriftProposed, set("/data/A", `"2"`))},
			want:    []string{"are Proposed on reflux/x, which does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dirs := map[string]string{"main": main}
			var branches []string
			for b, d := range tt.branches {
				dirs[b] = d
				branches = append(branches, b)
			}
			err := Check(context.Background(), Input{Records: tt.records, Branches: branches, Source: "main",
				Checkout: func(b string) (string, error) { return dirs[b], nil }})
			if len(tt.want) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}
