package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// traceWriter prints trace results as text or as one JSON object a line.
type traceWriter struct {
	out  io.Writer
	json bool
	ref  origin.ObjectRef
	// paths rewrites a root-relative file for text output.
	paths pathStyle
	// reasons collects the refusals printed, for the legend.
	reasons map[origin.Reason]bool
}

// traceRecord is the -o json shape, one per line. Files are relative to
// the repository root, whatever the current directory.
type traceRecord struct {
	Object  string         `json:"object"`
	Pointer string         `json:"pointer"`
	File    string         `json:"file"`
	Line    int            `json:"line"`
	Column  int            `json:"column"`
	Kind    origin.Kind    `json:"kind"`
	Chain   []origin.Layer `json:"chain"`
	Refused origin.Reason  `json:"refused"`
	// Why and Edit explain a refusal: one sentence, and the declaration
	// to edit instead when there is one.
	Why  string        `json:"why,omitempty"`
	Edit *origin.Layer `json:"edit,omitempty"`
}

// pathStyle prints root-relative files relative to the current directory
// when they all sit under it, else relative to the repository root; the
// header says which, so a path is never ambiguous.
type pathStyle struct {
	root, cwd string
	underCwd  bool
}

// newPathStyle decides once per run, from every file the output names.
func newPathStyle(root, cwd string, files []string) pathStyle {
	p := pathStyle{root: root, cwd: cwd, underCwd: true}
	for _, f := range files {
		rel, err := filepath.Rel(cwd, filepath.Join(root, filepath.FromSlash(f)))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			p.underCwd = false
			break
		}
	}
	return p
}

func (p pathStyle) header() string {
	switch {
	case p.underCwd:
		return "# paths relative to the current directory"
	case p.root == "":
		return "# paths relative to the repository root"
	}
	return "# paths relative to the repository root " + p.root
}

// file rewrites a root-relative file; substituteFrom sources (Kind/NAME)
// and empty files are left alone.
func (p pathStyle) file(f string) string {
	if !p.underCwd || f == "" || strings.HasPrefix(f, "ConfigMap/") || strings.HasPrefix(f, "Secret/") || strings.HasPrefix(f, "Flag/") {
		return f
	}
	rel, err := filepath.Rel(p.cwd, filepath.Join(p.root, filepath.FromSlash(f)))
	if err != nil {
		return f
	}
	return filepath.ToSlash(rel)
}

func (p pathStyle) position(l origin.Layer) string {
	l.File = p.file(l.File)
	return l.Position()
}

func objectName(r origin.ObjectRef) string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// field prints one field; single prints the chain under it, for a pointer.
func (w *traceWriter) field(f origin.Field, single bool) error {
	if w.json {
		return w.jsonField(f)
	}
	if f.Refused != "" {
		return w.refused(f, single)
	}
	at := w.paths.position(origin.Layer{File: f.Origin.File, Line: f.Origin.Line, Column: f.Origin.Column})
	if !single {
		_, err := fmt.Fprintf(w.out, "%s  %s  %s\n", f.Pointer, at, f.Origin.Kind)
		return err
	}
	// The chain reads from base to overlay, as in JSON: why the value is
	// what it is, layer by layer. A one-step chain is the origin itself,
	// printed once.
	if len(f.Origin.Chain) < 2 {
		_, err := fmt.Fprintf(w.out, "%s  %s%s\n", at, f.Origin.Kind, describe(f.Origin.Chain[0]))
		return err
	}
	if _, err := fmt.Fprintf(w.out, "%s  %s\n", at, f.Origin.Kind); err != nil {
		return err
	}
	for _, l := range f.Origin.Chain {
		if _, err := fmt.Fprintf(w.out, "  %s  %s%s\n", w.paths.position(l), l.Kind, describe(l)); err != nil {
			return err
		}
	}
	return nil
}

func (w *traceWriter) jsonField(f origin.Field) error {
	rec := traceRecord{Object: objectName(w.ref), Pointer: f.Pointer, Refused: f.Refused,
		File: f.Origin.File, Line: f.Origin.Line, Column: f.Origin.Column, Kind: f.Origin.Kind, Chain: f.Origin.Chain}
	if rec.Chain == nil {
		rec.Chain = []origin.Layer{}
	}
	if f.Refused != "" {
		rec.Why, rec.Edit = f.Refused.Why(), f.Edit
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w.out, "%s\n", data)
	return err
}

// refused prints a refusal: the reason, and where to edit instead; one
// pointer also gets the why, a listing gets a legend at the end.
func (w *traceWriter) refused(f origin.Field, single bool) error {
	edit := ""
	if f.Edit != nil {
		edit = fmt.Sprintf("  edit %s%s", w.paths.position(*f.Edit), describe(*f.Edit))
	}
	if !single {
		if w.reasons == nil {
			w.reasons = map[origin.Reason]bool{}
		}
		w.reasons[f.Refused] = true
		_, err := fmt.Fprintf(w.out, "%s  REFUSED  %s%s\n", f.Pointer, f.Refused, edit)
		return err
	}
	if _, err := fmt.Fprintf(w.out, "REFUSED  %s\n  why:  %s\n", f.Refused, f.Refused.Why()); err != nil {
		return err
	}
	if f.Edit != nil {
		_, err := fmt.Fprintf(w.out, "  edit: %s%s\n", w.paths.position(*f.Edit), describe(*f.Edit))
		return err
	}
	return nil
}

// legend prints, after a listing, why each reason printed was refused.
func (w *traceWriter) legend() error {
	if w.json || len(w.reasons) == 0 {
		return nil
	}
	var rs []string
	for r := range w.reasons {
		rs = append(rs, string(r))
	}
	sort.Strings(rs)
	for _, r := range rs {
		if _, err := fmt.Fprintf(w.out, "# %s: %s\n", r, origin.Reason(r).Why()); err != nil {
			return err
		}
	}
	return nil
}

func describe(l origin.Layer) string {
	s := ""
	if l.Via != "" {
		s += "  (" + l.Via + ")"
	}
	if l.Variable != "" {
		s += "  ${" + l.Variable + "}"
	}
	return s
}
