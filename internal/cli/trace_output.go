package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// traceWriter prints trace results as text or as one JSON object a line.
type traceWriter struct {
	out  io.Writer
	json bool
	ref  origin.ObjectRef
}

// traceRecord is the -o json shape, one per line.
type traceRecord struct {
	Object  string         `json:"object"`
	Pointer string         `json:"pointer"`
	File    string         `json:"file"`
	Line    int            `json:"line"`
	Column  int            `json:"column"`
	Kind    origin.Kind    `json:"kind"`
	Chain   []origin.Layer `json:"chain"`
	Refused origin.Reason  `json:"refused"`
}

func objectName(r origin.ObjectRef) string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// field prints one field; single prints the chain under it, for a pointer.
func (w traceWriter) field(f origin.Field, single bool) error {
	if w.json {
		rec := traceRecord{Object: objectName(w.ref), Pointer: f.Pointer, Refused: f.Refused,
			File: f.Origin.File, Line: f.Origin.Line, Column: f.Origin.Column, Kind: f.Origin.Kind, Chain: f.Origin.Chain}
		if rec.Chain == nil {
			rec.Chain = []origin.Layer{}
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w.out, "%s\n", data)
		return err
	}
	var err error
	switch {
	case single && f.Refused != "":
		_, err = fmt.Fprintf(w.out, "REFUSED  %s\n", f.Refused)
	case single:
		if _, err = fmt.Fprintf(w.out, "%s  %s\n", position(f.Origin.File, f.Origin.Line, f.Origin.Column), f.Origin.Kind); err != nil {
			return err
		}
		// The chain reads from base to overlay, as in JSON: why the value
		// is what it is, layer by layer.
		for _, l := range f.Origin.Chain {
			if _, err = fmt.Fprintf(w.out, "  %s  %s%s\n", l.Position(), l.Kind, describe(l)); err != nil {
				return err
			}
		}
	case f.Refused != "":
		_, err = fmt.Fprintf(w.out, "%s  REFUSED  %s\n", f.Pointer, f.Refused)
	default:
		_, err = fmt.Fprintf(w.out, "%s  %s  %s\n", f.Pointer, position(f.Origin.File, f.Origin.Line, f.Origin.Column), f.Origin.Kind)
	}
	return err
}

func position(file string, line, col int) string {
	return origin.Layer{File: file, Line: line, Column: col}.Position()
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
