package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/chart/postrender"
)

// TestHelmReleaseDocPostRenderer: where a HelmRelease file sets a field
// through spec.postRenderers, for each way YAML writes a patch's text.
func TestHelmReleaseDocPostRenderer(t *testing.T) {
	const release = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
spec:
  postRenderers:
    - kustomize:
        patches:
          - patch: |
              - op: replace
                path: /spec/replicas
                value: 4
          - patch: '[{"op": "replace", "path": "/spec/replicas", "value": 4}]'
          - patch: "[{\"op\": \"replace\", \"path\": \"/spec/replicas\", \"value\": 4}]"
          - patch: >
              [{"op": "replace",
              "path": "/spec/replicas", "value": 4}]
        images:
          - name: web
            newTag: "2"
`
	file := filepath.Join(t.TempDir(), "release.yaml")
	NewWithT(t).Expect(os.WriteFile(file, []byte(release), 0o600)).To(Succeed())
	doc, err := helmReleaseFile(file)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	const patches = "/spec/postRenderers/0/kustomize/patches/"
	for _, c := range []struct {
		name string
		s    postrender.Setter
		at   string // "" when not found
	}{
		{name: "a literal block: the line within it", s: postrender.Setter{Path: patches + "0/patch", Line: 3, Column: 10, Block: true},
			at: ":12:24"},
		{name: "a single-quoted line: the column within it", s: postrender.Setter{Path: patches + "1/patch", Line: 1, Column: 55},
			at: ":13:75"},
		{name: "escapes: the patch's start", s: postrender.Setter{Path: patches + "2/patch", Line: 1, Column: 55}, at: ":14:20"},
		{name: "a folded block: the patch's start", s: postrender.Setter{Path: patches + "3/patch", Line: 1, Column: 55, Block: true},
			at: ":15:20"},
		{name: "an image entry's key", s: postrender.Setter{Path: "/spec/postRenderers/0/kustomize/images/0/newTag"}, at: ":20:21"},
		{name: "a path the file does not have", s: postrender.Setter{Path: patches + "4/patch", Line: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			at, ok := doc.postRenderer(c.s)
			g.Expect(ok).To(Equal(c.at != ""))
			if c.at != "" {
				g.Expect(at).To(Equal(file + c.at))
			}
		})
	}
}
