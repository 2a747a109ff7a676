package kustomize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The size budgets of a build (issue 22 §2). kyaml holds about 30 times
// the bytes it parses (measured: 4 MiB of ConfigMaps peak at 122 MiB of
// heap), and kustomize-controller has no limit of its own beyond what its
// fetcher extracts, so a hostile tree could make a build take gigabytes.
// Both budgets count what kustomize actually reads, not the whole tree: a
// monorepo's unrelated large files cost nothing, as they cost Flux nothing.
const (
	// DefaultMaxFileSize is how large one file kustomize reads may be.
	// The largest manifests real trees hold are vendored CRD bundles of a
	// few MiB (prometheus-operator's bundle.yaml is the usual one), and no
	// single object may exceed etcd's 1.5 MiB request limit, so 16 MiB
	// leaves room for any real file while a 100 MB one is refused before
	// it is parsed (about 500 MiB of heap at most).
	DefaultMaxFileSize = 16 << 20
	// DefaultMaxLoadSize is how many bytes one build may read in all,
	// counting a file each time kustomize reads it (a base shared by
	// overlays is read once per overlay). A tree of 20,000 objects, the
	// largest reflux is benchmarked with, is about 40 MiB; 64 MiB keeps a
	// build's heap near 2 GiB at worst.
	DefaultMaxLoadSize = 64 << 20
)

// Sentinels for Build's refusals of hostile or malformed trees; each
// refusal wraps one and names the file.
var (
	// ErrFileTooLarge: a file kustomize would read is over MaxFileSize.
	ErrFileTooLarge = errors.New("file over the size budget")
	// ErrLoadTooLarge: kustomize read more than MaxLoadSize in all.
	ErrLoadTooLarge = errors.New("build over the size budget")
	// ErrOutsideRoot: kustomize was asked to read outside the source root,
	// through a symlink or a ".." path. Flux's file system refuses it, and
	// so does kustomize-controller for the same tree.
	ErrOutsideRoot = errors.New("path outside the source root")
)

// sizeLimits returns opts' budgets, defaults filled in.
func sizeLimits(opts BuildOptions) (maxFile, maxLoad int64) {
	maxFile, maxLoad = opts.MaxFileSize, opts.MaxLoadSize
	if maxFile <= 0 {
		maxFile = DefaultMaxFileSize
	}
	if maxLoad <= 0 {
		maxLoad = DefaultMaxLoadSize
	}
	return maxFile, maxLoad
}

// budgetFS is the file system krusty builds on: Flux's secure file system
// (what generator.SecureBuild uses), with every read checked against the
// size budgets before krusty gets the bytes. krusty turns a failed read
// into a nested message (it tries a resource as a file, then as a
// directory), so the first refusal is kept and Build reports it instead.
type budgetFS struct {
	filesys.FileSystem
	// work is the build root as krusty names it, realWork as the
	// kernel does (the temp dir may sit behind a symlink).
	work, realWork   string
	maxFile, maxLoad int64

	mu      sync.Mutex
	loaded  int64
	refused error
	// aliased holds the real paths whose aliases were checked, and the
	// refusal if any: a base shared by overlays is read once per overlay
	// and parsed for its aliases once.
	aliased map[string]error
}

// newBudgetFS returns the file system for a build of work, refusing paths
// outside it as generator.SecureBuild does.
func newBudgetFS(work string, allowRemoteBases bool, maxFile, maxLoad int64) (*budgetFS, error) {
	var fs filesys.FileSystem
	var err error
	if allowRemoteBases {
		fs, err = securefs.MakeFsOnDiskSecureBuild(work)
	} else {
		fs, err = securefs.MakeFsOnDiskSecure(work)
	}
	if err != nil {
		return nil, fmt.Errorf("securing build dir: %w", err)
	}
	realWork, err := filepath.EvalSymlinks(work)
	if err != nil {
		return nil, fmt.Errorf("resolving build dir: %w", err)
	}
	return &budgetFS{FileSystem: fs, work: work, realWork: realWork, maxFile: maxFile, maxLoad: maxLoad}, nil
}

// ReadFile reads path if it fits the budgets and its YAML aliases do not
// expand past MaxExpandedNodes: kyaml would expand them as it parses.
func (b *budgetFS) ReadFile(path string) ([]byte, error) {
	if err := b.charge(path); err != nil {
		return nil, err
	}
	data, err := b.FileSystem.ReadFile(path)
	if err != nil {
		return data, b.note(path, err)
	}
	if err := b.checkAliases(path, data); err != nil {
		return nil, err
	}
	return data, nil
}

// checkAliases checks data, read from path, once per real path.
func (b *budgetFS) checkAliases(path string, data []byte) error {
	key := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		key = real
	}
	b.mu.Lock()
	refused, done := b.aliased[key]
	b.mu.Unlock()
	if !done {
		refused = checkAliases(b.rel(path), data)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.aliased == nil {
		b.aliased = map[string]error{}
	}
	b.aliased[key] = refused
	if refused != nil {
		return b.refuse(refused)
	}
	return nil
}

// Open opens path if it fits the budgets.
func (b *budgetFS) Open(path string) (filesys.File, error) {
	if err := b.charge(path); err != nil {
		return nil, err
	}
	f, err := b.FileSystem.Open(path)
	return f, b.note(path, err)
}

// CleanedAbs is where krusty first meets a directory outside the root.
func (b *budgetFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	d, f, err := b.FileSystem.CleanedAbs(path)
	return d, f, b.note(path, err)
}

// charge counts path's size against the budgets. Only files inside the
// work root are counted: the secure file system refuses the others.
func (b *budgetFS) charge(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || !within(b.realWork, real) {
		return nil
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case fi.Size() > b.maxFile:
		return b.refuse(fmt.Errorf("%s: %w: %s, over the %s a file may have; refusing to parse it",
			b.rel(path), ErrFileTooLarge, mib(fi.Size()), mib(b.maxFile)))
	case b.loaded+fi.Size() > b.maxLoad:
		return b.refuse(fmt.Errorf("%w: reading %s takes the build past the %s it may read in all; refusing to parse more",
			ErrLoadTooLarge, b.rel(path), mib(b.maxLoad)))
	}
	b.loaded += fi.Size()
	return nil
}

// note keeps a refusal of the secure file system, naming the path.
func (b *budgetFS) note(path string, err error) error {
	var ce *securefs.ConstraintError
	if !errors.As(err, &ce) {
		return err
	}
	msg := "a symlink or a \"..\" path leaves it; kustomize-controller refuses to read it too"
	if real, rerr := filepath.EvalSymlinks(path); rerr == nil && real != path {
		msg = "it resolves to " + real + "; kustomize-controller refuses to read it too"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refuse(fmt.Errorf("%s: %w: %s", b.rel(path), ErrOutsideRoot, msg))
}

// refuse keeps the first refusal and returns err; b.mu is held.
func (b *budgetFS) refuse(err error) error {
	if b.refused == nil {
		b.refused = err
	}
	return err
}

// refusal is the first refusal, if any.
func (b *budgetFS) refusal() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused
}

// rel names path as the tree does: relative to the work root when inside it.
func (b *budgetFS) rel(path string) string {
	if r, err := filepath.Rel(b.work, path); err == nil && within(b.work, path) {
		return filepath.ToSlash(r)
	}
	return path
}

// mib formats a size in MiB.
func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
