package testenv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// writeTree writes files (path -> content) under a new temp dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPushReplacesTheWholeTree(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	first, err := env.Git.PushDir(ctx, "push.git", writeTree(t, map[string]string{"a.yaml": "a", "sub/b.yaml": "b"}))
	g.Expect(err).NotTo(HaveOccurred())
	second, err := env.Git.PushDir(ctx, "push.git", writeTree(t, map[string]string{"c.yaml": "c"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).NotTo(Equal(first))

	dir := t.TempDir()
	repo, err := env.Git.Clone(ctx, "push.git", testenv.DefaultBranch, dir)
	g.Expect(err).NotTo(HaveOccurred())
	head, err := repo.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash().String()).To(Equal(second))
	parent, err := repo.CommitObject(head.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parent.ParentHashes).To(HaveLen(1))
	g.Expect(parent.ParentHashes[0].String()).To(Equal(first))

	g.Expect(filepath.Join(dir, "c.yaml")).To(BeARegularFile())
	g.Expect(filepath.Join(dir, "a.yaml")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(dir, "sub")).NotTo(BeAnExistingFile())
}

func TestPushToANewBranch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, err := env.Git.PushDir(ctx, "branches.git", writeTree(t, map[string]string{"main.yaml": "m"}))
	g.Expect(err).NotTo(HaveOccurred())
	hash, err := env.Git.Push(ctx, testenv.PushOptions{
		Repo: "branches.git", Branch: "feature", Dir: writeTree(t, map[string]string{"f.yaml": "f"}),
	})
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	repo, err := env.Git.Clone(ctx, "branches.git", "feature", dir)
	g.Expect(err).NotTo(HaveOccurred())
	head, err := repo.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash().String()).To(Equal(hash))
	g.Expect(filepath.Join(dir, "f.yaml")).To(BeARegularFile())
}

func TestStartReportsMissingBinaries(t *testing.T) {
	g := NewWithT(t)
	_, err := testenv.Start(context.Background(), testenv.Options{BinDir: t.TempDir()})
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, testenv.ErrMissingBinary)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("make testbin"))
}

// TestFluxDirEnvSwapsTheControllers checks REFLUX_TESTENV_FLUX_DIR reaches
// Start: Flux's CRDs and controllers are looked up there, not in bin/.
func TestFluxDirEnvSwapsTheControllers(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	t.Setenv(testenv.FluxDirEnv, dir)
	_, err := testenv.Start(context.Background(), testenv.Options{})
	g.Expect(errors.Is(err, testenv.ErrMissingBinary)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(filepath.Join(dir, "source-controller-crd")))
}
