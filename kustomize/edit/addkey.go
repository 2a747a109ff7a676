package edit

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// addKey adds a data key to a ConfigMap or Secret where its other keys
// come from: the resource document's data map, the generator's literals,
// or the generator's env file.
func (p *planner) addKey(ch Change) (string, error) {
	// isDataKey made the pointer /data/TOKEN: one escaped token.
	key := jsonptr.Unescape(strings.TrimPrefix(ch.Pointer, "/data/"))
	last := p.dataOrigin()
	if last == nil {
		return p.addDataMap(ch, key)
	}
	if p.shared(*last) && !p.opts.AllowSharedFiles {
		if last.Kind != origin.KindResource {
			return "", fmt.Errorf("%w: %s is generated in a shared base", ErrShared, p.ref)
		}
		return ScopeOverlayPatch, p.overlayPatch(ch)
	}
	switch last.Kind {
	case origin.KindResource, origin.KindPatch:
		return ScopeOrigin, p.addMapKey(*last, key, ch.Value)
	case origin.KindGeneratorLiteral:
		return ScopeOrigin, p.addLiteral(*last, key, p.plainValue(ch))
	case origin.KindGeneratorEnv:
		return ScopeOrigin, p.addEnvLine(*last, key, p.plainValue(ch))
	}
	return "", fmt.Errorf("%w: cannot add a key beside a %s origin", ErrUnsupported, last.Kind)
}

// dataOrigin picks the data key to add beside: a literal first, then an
// env-file line, then a resource or patch document; the last of its kind.
func (p *planner) dataOrigin() *origin.Origin {
	rank := map[origin.Kind]int{origin.KindGeneratorLiteral: 4, origin.KindGeneratorEnv: 3, origin.KindResource: 2, origin.KindPatch: 1}
	var best *origin.Origin
	for _, f := range p.fields {
		if !strings.HasPrefix(f.Pointer, "/data/") || f.Refused != "" || rank[f.Origin.Kind] == 0 {
			continue
		}
		if best == nil || rank[f.Origin.Kind] >= rank[best.Kind] {
			o := f.Origin
			best = &o
		}
	}
	return best
}

// addDataMap adds a data map holding the key to the resource document that
// declares an object without data.
func (p *planner) addDataMap(ch Change, key string) (string, error) {
	f, ok := p.field("/metadata/name")
	if !ok || f.Refused != "" || f.Origin.Chain[0].Kind != origin.KindResource {
		return "", fmt.Errorf("%w: %s has no resource document to add data to", ErrUnsupported, p.ref)
	}
	decl := f.Origin.Chain[0]
	if p.shared(origin.Origin{File: decl.File, Line: decl.Line, Column: decl.Column, Kind: decl.Kind}) && !p.opts.AllowSharedFiles {
		return ScopeOverlayPatch, p.overlayPatch(ch)
	}
	data, err := p.read(decl.File)
	if err != nil {
		return "", err
	}
	line, col, err := p.locate(decl.File, decl.Line, decl.Column)
	if err != nil {
		return "", err
	}
	md, err := enclosingMap(data, line, col)
	if err != nil {
		return "", err
	}
	root, err := enclosingMap(data, md.Line, md.Column)
	if err != nil {
		return "", err
	}
	lastKey := root.Content[len(root.Content)-2]
	lines := strings.SplitAfter(string(data), "\n")
	end := entryEnd(lines, lastKey.Line, lastKey.Column)
	k, err := formatScalar(key, 0)
	if err != nil {
		return "", err
	}
	v, err := formatScalar(ch.Value, 0)
	if err != nil {
		return "", err
	}
	indent := strings.Repeat(" ", lastKey.Column-1)
	at, text := insertBefore(lines, end, indent+"data:\n"+indent+"  "+k+": "+v+"\n")
	p.write(decl.File, data, at, text)
	return ScopeOrigin, nil
}

// addMapKey inserts "KEY: value" after the last entry of the data map
// holding the origin's value, at the same indentation.
func (p *planner) addMapKey(o origin.Origin, key string, v interface{}) error {
	data, line, col, err := p.readAt(o)
	if err != nil {
		return err
	}
	dataMap, err := enclosingMap(data, line, col)
	if err != nil {
		return err
	}
	if dataMap.Style&yaml.FlowStyle != 0 {
		return fmt.Errorf("%w: flow-style data map in %s", ErrUnsupported, o.File)
	}
	return p.appendEntry(o.File, data, dataMap, []string{key}, v)
}

// appendEntry inserts, after the last entry of the block map m of file
// (whose content so far is data) and at its indentation, the entry of
// keys nested one in another, the last holding v.
func (p *planner) appendEntry(file string, data []byte, m *yaml.Node, keys []string, v any) error {
	lastKey := m.Content[len(m.Content)-2]
	lines := strings.SplitAfter(string(data), "\n")
	end := entryEnd(lines, lastKey.Line, lastKey.Column)
	val, err := formatScalar(v, 0)
	if err != nil {
		return err
	}
	var text strings.Builder
	for i, key := range keys {
		k, err := formatScalar(key, 0)
		if err != nil {
			return err
		}
		text.WriteString(strings.Repeat(" ", lastKey.Column-1) + strings.Repeat("  ", i) + k + ":")
		if i == len(keys)-1 {
			text.WriteString(" " + val)
		}
		text.WriteString("\n")
	}
	at, ins := insertBefore(lines, end, text.String())
	p.write(file, data, at, ins)
	return nil
}

// enclosingMap finds the mapping node whose value sits at line:col.
func enclosingMap(data []byte, line, col int) (*yaml.Node, error) {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var d yaml.Node
		if dec.Decode(&d) != nil {
			break
		}
		docs = append(docs, &d)
	}
	var found *yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				if v := n.Content[i]; v.Line == line && v.Column == col {
					found = n
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range docs {
		walk(d)
	}
	if found == nil {
		return nil, fmt.Errorf("no map holds %d:%d", line, col)
	}
	return found, nil
}

// entryEnd returns the index of the first line after the entry whose key
// starts at line:col (1-based): the next line indented no deeper than the key.
func entryEnd(lines []string, line, col int) int {
	for i := line; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			continue
		}
		if ind := len(lines[i]) - len(strings.TrimLeft(lines[i], " ")); ind < col || t == "---" {
			// keep trailing blank lines after the new entry
			for i > line && strings.TrimSpace(lines[i-1]) == "" {
				i--
			}
			return i
		}
	}
	end := len(lines)
	if end > 0 && lines[end-1] == "" {
		end-- // SplitAfter's empty tail after the final newline
	}
	return end
}

// addLiteral appends KEY=VALUE to the literals list holding the origin.
func (p *planner) addLiteral(o origin.Origin, key string, v interface{}) error {
	data, line, col, err := p.readAt(o)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	// Literals are one line each: find the last consecutive item sharing
	// the origin item's "- " prefix.
	prefix := lines[line-1][:col-1]
	last := line
	for last < len(lines) && strings.HasPrefix(lines[last], prefix) && len(lines[last]) > len(prefix) {
		last++
	}
	_, q, err := scalarSpan([]byte(lines[line-1]), col-1)
	if err != nil {
		return err
	}
	text, err := formatScalar(key+"="+fmt.Sprint(v), q)
	if err != nil {
		return err
	}
	at, ins := insertBefore(lines, last, prefix+text+"\n")
	p.write(o.File, data, at, ins)
	return nil
}

// addEnvLine appends KEY=VALUE to the env file.
func (p *planner) addEnvLine(o origin.Origin, key string, v interface{}) error {
	data, err := p.read(o.File)
	if err != nil {
		return err
	}
	p.write(o.File, data, span{len(data), len(data)}, terminate(data)+key+"="+fmt.Sprint(v)+"\n")
	return nil
}

// insertBefore returns the edit that inserts block before lines[end],
// ending the line above first when it is the file's last and has no
// newline.
func insertBefore(lines []string, end int, block string) (span, string) {
	off := 0
	for _, l := range lines[:end] {
		off += len(l)
	}
	if end > 0 && !strings.HasSuffix(lines[end-1], "\n") {
		block = "\n" + block
	}
	return span{off, off}, block
}

// terminate is the newline to write before appending to data: none when
// data is empty or already ends a line.
func terminate(data []byte) string {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return ""
	}
	return "\n"
}
