package gogit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
)

var author = git.Signature{Name: "reflux", Email: "reflux@example.com"}

func open(t *testing.T, srv *gitserver.Server, dir, repo string, data map[string][]byte) (*Client, error) {
	t.Helper()
	auth, err := git.NewAuth(srv.URL(repo), data)
	if err != nil {
		return nil, err
	}
	c, err := Open(context.Background(), dir, srv.URL(repo), auth, WithInsecureHTTP())
	if err != nil {
		return nil, err
	}
	t.Cleanup(c.Close)
	return c, c.Fetch(context.Background())
}

// TestClientRoundTrip runs the same journey over HTTP basic auth and SSH.
func TestClientRoundTrip(t *testing.T) {
	servers := map[string]func(testing.TB) *gitserver.Server{
		"http": gitserver.StartHTTP,
		"ssh":  gitserver.StartSSH,
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			srv := start(t)
			srv.Seed(t, "repo.git", "main", map[string]string{"apps/web.yaml": "replicas: 2\n"})
			dir := filepath.Join(t.TempDir(), "clone")

			c, err := open(t, srv, dir, "repo.git", srv.SecretData)
			g.Expect(err).ToNot(HaveOccurred())
			main, err := c.Branch("main")
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(main.Hash).To(Equal(srv.Head(t, "repo.git", "main")))
			_, err = c.Branch("nope")
			g.Expect(err).To(MatchError(git.ErrBranchNotFound))

			g.Expect(c.Checkout(main.Hash)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(dir, "apps/web.yaml"), []byte("replicas: 5\n"), 0o644)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x"), 0o644)).To(Succeed())
			h, err := c.Commit(git.CommitRequest{Paths: []string{"apps/web.yaml"}, Message: "fix\n", Author: author})
			g.Expect(err).ToNot(HaveOccurred())
			files, err := c.Diff(main.Hash, h)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(files).To(Equal([]string{"apps/web.yaml"}), "only the listed path is committed")

			g.Expect(c.Push(ctx, git.PushRequest{Branch: "reflux/a", Hash: h})).To(Succeed())
			g.Expect(srv.Head(t, "repo.git", "reflux/a")).To(Equal(h))
			refs, err := c.Branches("reflux/")
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(refs).To(ConsistOf(git.Ref{Name: "reflux/a", Hash: h}))

			// The cache is reused: a marker inside .git survives a reopen.
			marker := filepath.Join(dir, ".git", "reflux-marker")
			g.Expect(os.WriteFile(marker, nil, 0o644)).To(Succeed())
			c, err = open(t, srv, dir, "repo.git", srv.SecretData)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(marker).To(BeAnExistingFile())

			g.Expect(c.Delete(ctx, "reflux/a", h)).To(Succeed())
			g.Expect(srv.Head(t, "repo.git", "reflux/a")).To(BeEmpty())
			g.Expect(c.Fetch(ctx)).To(Succeed())
			_, err = c.Branch("reflux/a")
			g.Expect(err).To(MatchError(git.ErrBranchNotFound))
		})
	}
}

func TestPushLease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n"})
	c, err := open(t, srv, filepath.Join(t.TempDir(), "c"), "repo.git", srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	main, _ := c.Branch("main")

	first := commitFile(t, c, main.Hash, "a.yaml", "a: 2\n")
	g.Expect(c.Push(ctx, git.PushRequest{Branch: "reflux/x", Hash: first})).To(Succeed())

	// Someone else moves the branch; a lease on the old value must fail.
	human := srv.HumanCommit(t, "repo.git", "reflux/x", map[string]string{"b.yaml": "b: 1\n"})
	rebased := commitFile(t, c, main.Hash, "a.yaml", "a: 3\n")
	err = c.Push(ctx, git.PushRequest{Branch: "reflux/x", Hash: rebased, Lease: first, Force: true})
	g.Expect(err).To(MatchError(git.ErrPushRejected))
	g.Expect(srv.Head(t, "repo.git", "reflux/x")).To(Equal(human))

	// Creating over an existing unrelated branch is not a fast-forward.
	err = c.Push(ctx, git.PushRequest{Branch: "reflux/x", Hash: rebased})
	g.Expect(err).To(MatchError(git.ErrPushRejected))

	// Deleting with a stale lease fails too.
	g.Expect(c.Delete(ctx, "reflux/x", first)).To(MatchError(git.ErrPushRejected))
	g.Expect(srv.Head(t, "repo.git", "reflux/x")).To(Equal(human))

	// With the right lease the force push goes through.
	g.Expect(c.Push(ctx, git.PushRequest{Branch: "reflux/x", Hash: rebased, Lease: human, Force: true})).To(Succeed())
	g.Expect(srv.Head(t, "repo.git", "reflux/x")).To(Equal(rebased))
}

func TestFetchPrunesDeletedBranches(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n"})
	human := srv.HumanCommit(t, "repo.git", "main", map[string]string{"b.yaml": "b: 1\n"})
	gitserver.Git(t, filepath.Join(srv.Root(), "repo.git"), "branch", "reflux/gone", human)
	c, err := open(t, srv, filepath.Join(t.TempDir(), "c"), "repo.git", srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(c.Branch("reflux/gone")).To(Equal(git.Ref{Name: "reflux/gone", Hash: human}))

	gitserver.Git(t, filepath.Join(srv.Root(), "repo.git"), "branch", "-D", "reflux/gone")
	g.Expect(c.Fetch(context.Background())).To(Succeed())
	_, err = c.Branch("reflux/gone")
	g.Expect(err).To(MatchError(git.ErrBranchNotFound))
	g.Expect(c.Branches("reflux/")).To(BeEmpty())
}

func TestFetchOnlyPrefixes(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n"})
	bare := filepath.Join(srv.Root(), "repo.git")
	gitserver.Git(t, bare, "branch", "feature/x", "main")
	gitserver.Git(t, bare, "branch", "reflux/a", "main")
	auth, err := git.NewAuth(srv.URL("repo.git"), srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	c, err := Open(context.Background(), filepath.Join(t.TempDir(), "c"), srv.URL("repo.git"), auth, WithInsecureHTTP())
	g.Expect(err).ToNot(HaveOccurred())
	t.Cleanup(c.Close)
	g.Expect(c.Fetch(context.Background(), "main", "reflux/", "missing")).To(Succeed())
	_, err = c.Branch("main")
	g.Expect(err).ToNot(HaveOccurred())
	_, err = c.Branch("reflux/a")
	g.Expect(err).ToNot(HaveOccurred())
	_, err = c.Branch("feature/x")
	g.Expect(err).To(MatchError(git.ErrBranchNotFound))
}

func TestOpenDropsCacheWithTooManyPacks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n"})
	auth, err := git.NewAuth(srv.URL("repo.git"), srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	dir := filepath.Join(t.TempDir(), "c")
	marker := filepath.Join(dir, ".git", "reflux-marker")
	openFetch := func() {
		c, err := Open(ctx, dir, srv.URL("repo.git"), auth, WithInsecureHTTP(), WithMaxPacks(2))
		g.Expect(err).ToNot(HaveOccurred())
		defer c.Close()
		g.Expect(c.Fetch(ctx)).To(Succeed())
	}
	openFetch() // pack 1
	g.Expect(os.WriteFile(marker, nil, 0o644)).To(Succeed())
	srv.HumanCommit(t, "repo.git", "main", map[string]string{"b.yaml": "b\n"})
	openFetch() // pack 2: still within the bound
	g.Expect(marker).To(BeAnExistingFile())
	srv.HumanCommit(t, "repo.git", "main", map[string]string{"c.yaml": "c\n"})
	openFetch() // pack 3
	g.Expect(marker).To(BeAnExistingFile())
	openFetch() // over the bound: dropped and fetched afresh into one pack
	g.Expect(marker).ToNot(BeAnExistingFile())
	packs, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/*.pack"))
	g.Expect(packs).To(HaveLen(1))
}

func TestHistory(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n"})
	c, err := open(t, srv, filepath.Join(t.TempDir(), "c"), "repo.git", srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	main, _ := c.Branch("main")
	one := commitFile(t, c, main.Hash, "a.yaml", "a: 2\n")
	two := commitFile(t, c, main.Hash, "b.yaml", "b: 2\n")

	g.Expect(c.IsAncestor(main.Hash, one)).To(BeTrue())
	g.Expect(c.IsAncestor(one, main.Hash)).To(BeFalse())
	g.Expect(c.MergeBase(one, two)).To(Equal(main.Hash))
	info, err := c.CommitInfo(one)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(info.Parents).To(Equal([]string{main.Hash}))
	g.Expect(info.Author.Email).To(Equal(author.Email))
	g.Expect(info.Signed).To(BeFalse())
	h1, _ := c.FileHash(one, "a.yaml")
	h0, _ := c.FileHash(main.Hash, "a.yaml")
	g.Expect(h1).ToNot(Equal(h0))
	g.Expect(c.FileHash(one, "missing/x.yaml")).To(BeEmpty())
}

// TestFileContent reads files at a commit: an empty file is present, a
// directory or a missing path is absent, and a symlink is refused rather
// than read as the text of its target.
func TestFileContent(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n", "dir/b.yaml": "b: 1\n", "empty": ""})
	c, err := open(t, srv, filepath.Join(t.TempDir(), "c"), "repo.git", srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	main, _ := c.Branch("main")
	g.Expect(c.Checkout(main.Hash)).To(Succeed())
	g.Expect(os.Symlink("a.yaml", filepath.Join(c.Path(), "link"))).To(Succeed())
	g.Expect(os.Remove(filepath.Join(c.Path(), "dir/b.yaml"))).To(Succeed())
	next, err := c.Commit(git.CommitRequest{Paths: []string{"link", "dir/b.yaml"}, Message: "link\n", Author: author})
	g.Expect(err).ToNot(HaveOccurred())

	tests := []struct {
		name, commit, path string
		want               string
		present            bool
		err                error
	}{
		{name: "file", commit: main.Hash, path: "a.yaml", want: "a: 1\n", present: true},
		{name: "nested file", commit: main.Hash, path: "dir/b.yaml", want: "b: 1\n", present: true},
		{name: "empty file", commit: main.Hash, path: "empty", present: true},
		{name: "missing", commit: main.Hash, path: "nope.yaml"},
		{name: "missing directory", commit: main.Hash, path: "nope/x.yaml"},
		{name: "directory", commit: main.Hash, path: "dir"},
		{name: "deleted", commit: next, path: "dir/b.yaml"},
		{name: "symlink", commit: next, path: "link", err: git.ErrNotRegularFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data, present, err := c.FileContent(tt.commit, tt.path)
			if tt.err != nil {
				g.Expect(err).To(MatchError(tt.err))
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(present).To(Equal(tt.present))
			g.Expect(string(data)).To(Equal(tt.want))
		})
	}
}

func TestCommitErrors(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n"})
	c, err := open(t, srv, filepath.Join(t.TempDir(), "c"), "repo.git", srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	main, _ := c.Branch("main")
	g.Expect(c.Checkout(main.Hash)).To(Succeed())

	for _, p := range []string{"../x", "/etc/passwd", ".git/config", ".git"} {
		_, err := c.Commit(git.CommitRequest{Paths: []string{p}, Message: "x", Author: author})
		g.Expect(err).To(MatchError(git.ErrInvalidPath), p)
	}
	_, err = c.Commit(git.CommitRequest{Paths: []string{"a.yaml"}, Message: "x", Author: author})
	g.Expect(err).To(MatchError(git.ErrNoChanges))

	// Leftovers of a failed Apply are gone after the next Checkout.
	g.Expect(os.MkdirAll(filepath.Join(c.Path(), "new/dir"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(c.Path(), "new/dir/x.yaml"), nil, 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(c.Path(), "a.yaml"), []byte("dirty"), 0o644)).To(Succeed())
	g.Expect(c.Checkout(main.Hash)).To(Succeed())
	g.Expect(filepath.Join(c.Path(), "new/dir/x.yaml")).ToNot(BeAnExistingFile())
	g.Expect(os.ReadFile(filepath.Join(c.Path(), "a.yaml"))).To(BeEquivalentTo("a: 1\n"))
	g.Expect(filepath.Join(c.Path(), ".git/config")).To(BeAnExistingFile())

	g.Expect(os.Remove(filepath.Join(c.Path(), "a.yaml"))).To(Succeed())
	h, err := c.Commit(git.CommitRequest{Paths: []string{"a.yaml"}, Message: "rm", Author: author})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(c.FileHash(h, "a.yaml")).To(BeEmpty())
}

func TestOpenErrors(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.StartHTTP(t)
	srv.Seed(t, "repo.git", "main", map[string]string{"a.yaml": "a: 1\n"})
	ctx := context.Background()

	auth, err := git.NewAuth(srv.URL("repo.git"), srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	_, err = Open(ctx, t.TempDir(), srv.URL("repo.git"), auth)
	g.Expect(err).To(MatchError(git.ErrInsecureTransport))

	_, err = open(t, srv, t.TempDir(), "repo.git", map[string][]byte{"username": []byte("x"), "password": []byte("y")})
	g.Expect(err).To(HaveOccurred())

	// A cache dir holding another remote is replaced, not reused.
	dir := filepath.Join(t.TempDir(), "c")
	srv.Seed(t, "other.git", "main", map[string]string{"o.yaml": "o: 1\n"})
	_, err = open(t, srv, dir, "other.git", srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	c, err := open(t, srv, dir, "repo.git", srv.SecretData)
	g.Expect(err).ToNot(HaveOccurred())
	main, err := c.Branch("main")
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(main.Hash).To(Equal(srv.Head(t, "repo.git", "main")))
}

func commitFile(t *testing.T, c *Client, parent, path, content string) string {
	t.Helper()
	if err := c.Checkout(parent); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Path(), path), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := c.Commit(git.CommitRequest{Paths: []string{path}, Message: "edit " + path + "\n",
		Author: git.Signature{Name: author.Name, Email: author.Email, When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
