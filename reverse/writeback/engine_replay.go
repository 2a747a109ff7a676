package writeback

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
)

// file is the content of a path, or its absence.
type file struct {
	data    []byte
	present bool
}

func (f file) equal(o file) bool {
	return f.present == o.present && bytes.Equal(f.data, o.data)
}

// replayer replays the changes of humans' commits onto the worktree.
type replayer struct {
	c    repository.Client
	root *os.Root
	// base is the source commit the worktree was built from.
	base string
	// touched lists the paths a replay wrote.
	touched map[string]bool
}

// replay applies, path by path, what co changed relative to its first
// parent. A merge of source history the base already has is not replayed
// for the paths it took from the source: only the merge's own content is
// the human's.
func (r *replayer) replay(co git.Commit) error {
	parent := ""
	if len(co.Parents) > 0 {
		parent = co.Parents[0]
	}
	merged, err := r.mergedSource(co)
	if err != nil {
		return err
	}
	paths, err := r.c.Diff(parent, co.Hash)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if merged != "" {
			same, err := sameFile(r.c, co.Hash, merged, p)
			if err != nil {
				return err
			}
			if same {
				continue
			}
		}
		if err := r.path(co, parent, p); err != nil {
			return err
		}
	}
	return nil
}

// mergedSource returns co's second parent when co merges history the base
// already contains, else "".
func (r *replayer) mergedSource(co git.Commit) (string, error) {
	if len(co.Parents) != 2 {
		return "", nil
	}
	in, err := r.c.IsAncestor(co.Parents[1], r.base)
	if err != nil || !in {
		return "", err
	}
	return co.Parents[1], nil
}

func (r *replayer) path(co git.Commit, parent, p string) error {
	from, err := content(r.c, parent, p)
	if err != nil {
		return fmt.Errorf("cannot replay %s: %w", describe(co), err)
	}
	to, err := content(r.c, co.Hash, p)
	if err != nil {
		return fmt.Errorf("cannot replay %s: %w", describe(co), err)
	}
	cur, err := readFile(r.root, p)
	if err != nil {
		return fmt.Errorf("cannot replay %s: %w", describe(co), err)
	}
	next, err := replayFile(from, to, cur)
	if err != nil {
		return conflict(fmt.Sprintf("cannot replay %s on %s: %v", describe(co), p, err))
	}
	r.touched[p] = true
	return writeFile(r.root, p, next)
}

// replayFile returns cur with the change from -> to applied. Whole-file
// cases (an untouched file, an addition, a deletion, the change already
// there) are decided exactly; an edit of a file that changed since is
// replayed as a text patch.
func replayFile(from, to, cur file) (file, error) {
	switch {
	case cur.equal(from), cur.equal(to):
		return to, nil
	case !from.present:
		return file{}, errors.New("it adds the file, which exists here with other content")
	case !cur.present:
		return file{}, errors.New("it edits the file, which is gone here")
	case !to.present:
		return file{}, errors.New("it deletes the file, whose content changed here")
	}
	text, err := patchText(string(from.data), string(to.data), string(cur.data))
	if err != nil {
		return file{}, err
	}
	return file{data: []byte(text), present: true}, nil
}

// patchText applies the line diff from -> to onto cur. A hunk applies
// when the lines it removes are still there, verbatim, and its context
// can be found; diffmatchpatch alone would also apply a hunk whose removed
// line holds another value by now, which is a conflict in git's terms and
// here.
func patchText(from, to, cur string) (out string, err error) {
	if !utf8.ValidString(from) || !utf8.ValidString(to) || !utf8.ValidString(cur) {
		return "", errors.New("it is not text and the file differs here")
	}
	// go-diff mixes byte and rune offsets; unusual input must yield a
	// conflict, never take the controller down.
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("patching failed: %v", p)
		}
	}()
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToChars(from, to)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(a, b, false), lines)
	for _, d := range diffs {
		if d.Type == diffmatchpatch.DiffDelete && !strings.Contains(cur, d.Text) {
			return "", fmt.Errorf("it changes %q, which is no longer there", strings.TrimSuffix(d.Text, "\n"))
		}
	}
	out, applied := dmp.PatchApply(dmp.PatchMake(from, diffs), cur)
	for _, ok := range applied {
		if !ok {
			return "", errors.New("a hunk does not apply here")
		}
	}
	if !utf8.ValidString(out) {
		return "", errors.New("patching broke the text")
	}
	return out, nil
}

// content reads path at commit; commit "" has no files.
func content(c repository.Client, commit, p string) (file, error) {
	if commit == "" {
		return file{}, nil
	}
	data, present, err := c.FileContent(commit, p)
	return file{data: data, present: present}, err
}

func sameFile(c repository.Client, a, b, p string) (bool, error) {
	ha, err := c.FileHash(a, p)
	if err != nil {
		return false, err
	}
	hb, err := c.FileHash(b, p)
	return ha == hb, err
}

// worktreePaths cleans the paths Apply reports. The engine reads and
// writes them as well as committing them, so a path that leaves the
// worktree or touches .git is refused before anything opens it.
func worktreePaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		clean := filepath.ToSlash(filepath.Clean(p))
		if !filepath.IsLocal(clean) || clean == ".git" || strings.HasPrefix(clean, ".git/") {
			return nil, fmt.Errorf("%w: %w: %q", ErrInvalidRequest, git.ErrInvalidPath, p)
		}
		out = append(out, clean)
	}
	return out, nil
}

// readFile reads a worktree path through root, which keeps symlinks from
// leading outside the worktree. A directory counts as no file, as in
// repository.Client.FileContent.
func readFile(root *os.Root, p string) (file, error) {
	fi, err := root.Lstat(p)
	switch {
	case absent(err):
		return file{}, nil
	case err != nil:
		return file{}, err
	case fi.IsDir():
		return file{}, nil
	case !fi.Mode().IsRegular():
		return file{}, fmt.Errorf("%w: %s", git.ErrNotRegularFile, p)
	}
	data, err := root.ReadFile(p)
	if err != nil {
		return file{}, err
	}
	return file{data: data, present: true}, nil
}

// writeFile makes a worktree path hold f. Whatever is in the way of a
// file is removed first, so a write never follows a symlink; a directory
// where no file is wanted is left to the paths inside it.
func writeFile(root *os.Root, p string, f file) error {
	fi, err := root.Lstat(p)
	if err != nil && !absent(err) {
		return err
	}
	exists := err == nil
	switch {
	case !f.present && (!exists || fi.IsDir()):
		return nil
	case !f.present:
		return root.Remove(p)
	case exists && !fi.Mode().IsRegular():
		if err := root.RemoveAll(p); err != nil {
			return err
		}
	}
	if dir := path.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// An existing file keeps its mode, e.g. an executable bit.
	return root.WriteFile(p, f.data, 0o644)
}

func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
