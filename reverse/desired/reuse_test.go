package desired

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize"
)

// TestReusable: a change to an object the new revision leaves as it was
// can be evaluated against the older render; one whose files changed, or
// after a kustomization file changed, cannot (issue 20).
func TestReusable(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(os.CopyFS(root, os.DirFS("testdata/shop"))).To(Succeed())
	// A file in the tree that the build never reads as a resource.
	g.Expect(os.WriteFile(filepath.Join(root, "base", "notes.txt"), []byte("x"), 0o600)).To(Succeed())
	ks := shopKustomization()
	r, err := render(context.Background(), kustomize.BuildOptions{Root: root, Kustomization: ks}, "main@sha1:abc", kustomize.Build)
	g.Expect(err).NotTo(HaveOccurred())
	r.Files, err = hashTree(root, "main@sha1:abc")
	g.Expect(err).NotTo(HaveOccurred())

	deploy := ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "checkout"}
	service := ObjectKey{Kind: "Service", Namespace: "shop", Name: "checkout"}
	files := r.Files.Files
	// Each tree is its own revision: a revision's tree never changes, and
	// the render remembers what changed to each.
	n := 0
	with := func(edit map[string]string) *Manifest {
		n++
		m := &Manifest{Revision: fmt.Sprintf("main@sha1:%d", n), Files: map[string]string{}}
		for p, sum := range files {
			m.Files[p] = sum
		}
		for p, sum := range edit {
			m.Files[p] = sum
		}
		return m
	}
	tests := []struct {
		name    string
		key     ObjectKey
		targets []*Manifest
		want    bool
	}{
		{"the render's own revision", deploy, []*Manifest{r.Files}, true},
		{"a revision that changed another object's file", service, []*Manifest{with(map[string]string{"base/deployment.yaml": "x"})}, true},
		{"a revision that changed the object's own file", deploy, []*Manifest{with(map[string]string{"base/deployment.yaml": "x"})}, false},
		{"a revision that changed a kustomization file", service, []*Manifest{with(map[string]string{"overlays/prod/kustomization.yaml": "x"})}, false},
		{"a revision that added an unrelated file", service, []*Manifest{with(map[string]string{"docs/README.md": "x"})}, true},
		{"a revision that changed a file the build does not read as a resource", service,
			[]*Manifest{with(map[string]string{"base/notes.txt": "y"})}, false},
		{"no revision to compare with", service, nil, false},
		{"the applied revision unchanged, the one rolling out changed it", deploy,
			[]*Manifest{r.Files, with(map[string]string{"base/deployment.yaml": "x"})}, false},
		{"a revision whose tree is unknown", service, []*Manifest{nil}, false},
		{"an object the render does not have", ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "gone"},
			[]*Manifest{with(map[string]string{"docs/README.md": "x"})}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(r.Reusable(tt.key, tt.targets)).To(Equal(tt.want))
		})
	}
	r.Files = nil
	g.Expect(r.Reusable(service, []*Manifest{with(nil)})).To(BeFalse(), "a render without a manifest")
}

func TestChanged(t *testing.T) {
	g := NewWithT(t)
	a := &Manifest{Files: map[string]string{"a": "1", "b": "2", "c": "3"}}
	b := &Manifest{Files: map[string]string{"a": "1", "b": "9", "d": "4"}}
	g.Expect(Changed(a, b)).To(Equal(map[string]bool{"b": true, "c": true, "d": true}))
}
