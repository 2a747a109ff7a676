package edit

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// draft is one PlanSet's state: the before render every change is planned
// against, and the files changed so far. The tree itself is never written.
//
// Every change is planned against the one before index, whose lines and
// columns point into the files as they are on disk; an earlier change of
// the set may have spliced or inserted text above such a position. The
// draft therefore records each edit and moves positions along (offset),
// which is what lets a set be planned without rebuilding between changes.
type draft struct {
	opts Options
	root string
	idx  *origin.Index
	res  *kustomize.Result
	// files holds the new content of every changed file.
	files map[string][]byte
	// edits lists, per file, the edits that made files[file] out of the
	// file on disk, in order.
	edits map[string][]fileEdit
	// patches holds the overlay patch bodies per patch file; flush merges
	// them into the file once every change is planned, so a change that
	// splices a value in an existing patch file is never overtaken by the
	// rewrite of that file.
	patches map[string][]map[string]interface{}
	// noEntries makes every overlay change a patch: set when an entry
	// reached more than the index showed.
	noEntries bool

	disk  map[string][]byte // files as on disk, read once
	fanIn map[position]int  // see shared
	graph map[string][]string
}

// position is a place in a source file as the before index names it.
type position struct {
	file      string
	line, col int
}

// fileEdit is one replacement in a file: the span it replaced, in the
// file's content at the time, and the length of the text put there. An
// insertion has an empty span.
type fileEdit struct {
	at span
	n  int
}

func newDraft(opts Options, before *Before) (*draft, error) {
	root, err := filepath.Abs(opts.Build.Root)
	if err != nil {
		return nil, err
	}
	if before.Result.Root != "" && before.Result.Root != root {
		return nil, fmt.Errorf("edit: the before render is of %s, not %s", before.Result.Root, root)
	}
	return &draft{
		opts: opts, root: root, idx: before.Index, res: before.Result,
		files: map[string][]byte{}, edits: map[string][]fileEdit{},
		patches: map[string][]map[string]interface{}{}, disk: map[string][]byte{},
	}, nil
}

// read returns a file's content as changed so far.
func (d *draft) read(rel string) ([]byte, error) {
	if data, ok := d.files[rel]; ok {
		return data, nil
	}
	return d.onDisk(rel)
}

// onDisk returns a file as the before render read it.
func (d *draft) onDisk(rel string) ([]byte, error) {
	if data, ok := d.disk[rel]; ok {
		return data, nil
	}
	data, err := os.ReadFile(filepath.Join(d.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	d.disk[rel] = data
	return data, nil
}

// write replaces span at of file, whose content so far is data, with text,
// and records the edit.
func (d *draft) write(file string, data []byte, at span, text string) {
	d.files[file] = splice(data, at, text)
	d.edits[file] = append(d.edits[file], fileEdit{at: at, n: len(text)})
}

// offset returns where the character at line:col of file, as the before
// index names it, is in the file's content so far.
func (d *draft) offset(file string, line, col int) (int, error) {
	data, err := d.onDisk(file)
	if err != nil {
		return 0, err
	}
	off, err := offsetOf(data, line, col)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	for _, e := range d.edits[file] {
		if off, err = e.move(off); err != nil {
			return 0, fmt.Errorf("%s:%d:%d: %w", file, line, col, err)
		}
	}
	return off, nil
}

// move returns where offset off is after the edit. The start of a
// replaced span stays where it was: it is the same token, rewritten (two
// changes of one value), and the caller re-reads its extent.
func (e fileEdit) move(off int) (int, error) {
	switch {
	case e.at.start == e.at.end:
		if off >= e.at.start {
			return off + e.n, nil
		}
	case off >= e.at.end:
		return off + e.n - (e.at.end - e.at.start), nil
	case off > e.at.start:
		return 0, fmt.Errorf("%w: an earlier change of the set rewrote it", ErrConflict)
	}
	return off, nil
}

// locate is offset as a line and column of the file's content so far.
func (d *draft) locate(file string, line, col int) (int, int, error) {
	if len(d.edits[file]) == 0 {
		return line, col, nil
	}
	off, err := d.offset(file, line, col)
	if err != nil {
		return 0, 0, err
	}
	data, err := d.read(file)
	if err != nil {
		return 0, 0, err
	}
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return bytes.Count(data[:start], []byte("\n")) + 1, utf8.RuneCount(data[start:off]) + 1, nil
}

// snapshot is the changeable part of a draft, to undo a refused change.
type snapshot struct {
	files   map[string][]byte
	edits   map[string][]fileEdit
	patches map[string][]map[string]interface{}
}

func (d *draft) snapshot() snapshot {
	// Shallow copies do: contents are replaced, never changed in place,
	// and an append after the snapshot lies beyond the lengths it holds.
	return snapshot{files: maps.Clone(d.files), edits: maps.Clone(d.edits), patches: maps.Clone(d.patches)}
}

func (d *draft) restore(s snapshot) {
	d.files, d.edits, d.patches = s.files, s.edits, s.patches
}

// flush writes the pending overlay patches: each patch file gets every
// body merged into what it holds so far.
func (d *draft) flush() error {
	for _, file := range slices.Sorted(maps.Keys(d.patches)) {
		old, doc, err := d.patchDoc(file)
		if err != nil {
			return err
		}
		for _, body := range d.patches[file] {
			mergeInto(doc, body)
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		d.write(file, old, span{0, len(old)}, buf.String())
	}
	d.patches = map[string][]map[string]interface{}{}
	return nil
}

// patchDoc reads an overlay patch file as changed so far; a file that does
// not exist yet is an empty document.
func (d *draft) patchDoc(file string) ([]byte, map[string]interface{}, error) {
	doc := map[string]interface{}{}
	old, err := d.read(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, doc, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := yaml.Unmarshal(old, &doc); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if doc == nil {
		doc = map[string]interface{}{} // an empty file
	}
	return old, doc, nil
}
