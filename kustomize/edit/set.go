package edit

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// setAt writes the new value at the origin, by origin kind.
func (p *planner) setAt(o origin.Origin, old interface{}, ch Change) error {
	last := o.Chain[len(o.Chain)-1]
	switch {
	case o.Kind == origin.KindGeneratorLiteral:
		return p.spliceLiteral(o, p.plainValue(ch))
	case o.Kind == origin.KindGeneratorEnv:
		return p.spliceEnv(o, p.plainValue(ch))
	case o.Kind == origin.KindGeneratorFile:
		data, err := p.read(o.File)
		if err != nil {
			return err
		}
		p.write(o.File, data, span{0, len(data)}, fmt.Sprint(p.plainValue(ch)))
		return nil
	case o.Kind == origin.KindImages || strings.Contains(last.Via, "images"):
		return p.spliceImage(o, last.Via, old, ch.Value)
	case o.Kind == origin.KindSubstitution:
		return p.spliceVariable(o, old, ch.Value)
	case o.Kind == origin.KindNameAffix || strings.HasSuffix(last.Via, "namePrefix") || strings.HasSuffix(last.Via, "nameSuffix"):
		return fmt.Errorf("%w: %s is produced by a name affix", ErrUnsupported, ch.Pointer)
	}
	return p.spliceScalar(o.File, o.Line, o.Column, ch.Value)
}

// plainValue decodes a Secret's data value: generators hold it in clear.
func (p *planner) plainValue(ch Change) interface{} {
	s, ok := ch.Value.(string)
	if p.ref.Kind != "Secret" || !ok || !strings.HasPrefix(ch.Pointer, "/data/") {
		return ch.Value
	}
	if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
		return string(dec)
	}
	return ch.Value
}

// spliceScalar replaces the scalar token at line:col, keeping its style.
func (p *planner) spliceScalar(file string, line, col int, v interface{}) error {
	data, err := p.read(file)
	if err != nil {
		return err
	}
	off, err := p.offset(file, line, col)
	if err != nil {
		return err
	}
	sp, q, err := scalarSpan(data, off)
	if err != nil {
		return fmt.Errorf("%s:%d:%d: %w", file, line, col, err)
	}
	text, err := formatScalar(v, q)
	if err != nil {
		return err
	}
	p.write(file, data, sp, text)
	return nil
}

// spliceLiteral rewrites the VALUE of a KEY=VALUE generator literal.
func (p *planner) spliceLiteral(o origin.Origin, v interface{}) error {
	data, err := p.read(o.File)
	if err != nil {
		return err
	}
	off, err := p.offset(o.File, o.Line, o.Column)
	if err != nil {
		return err
	}
	sp, q, err := scalarSpan(data, off)
	if err != nil {
		return err
	}
	var lit string
	if err := yaml.Unmarshal(data[sp.start:sp.end], &lit); err != nil {
		return fmt.Errorf("%s:%d:%d: reading literal: %w", o.File, o.Line, o.Column, err)
	}
	key, val, _ := strings.Cut(lit, "=")
	newVal := fmt.Sprint(v)
	// Keep quotes that wrapped the value inside the literal.
	if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
		newVal = string(val[0]) + newVal + string(val[0])
	}
	text, err := formatScalar(key+"="+newVal, q)
	if err != nil {
		return err
	}
	p.write(o.File, data, sp, text)
	return nil
}

// spliceEnv rewrites the value of a KEY=VALUE env-file line.
func (p *planner) spliceEnv(o origin.Origin, v interface{}) error {
	data, err := p.read(o.File)
	if err != nil {
		return err
	}
	start, err := p.offset(o.File, o.Line, 1)
	if err != nil {
		return err
	}
	end := len(data)
	if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
		end = start + i
	}
	line := strings.TrimSuffix(string(data[start:end]), "\r")
	s := fmt.Sprint(v)
	if strings.Contains(s, "\n") {
		return fmt.Errorf("%w: multi-line value in an env file", ErrUnsupported)
	}
	i := strings.IndexByte(line, '=')
	if i < 0 {
		// A bare KEY line is the key with the empty value (kustomize's
		// kv loader): the value goes after a new "=".
		p.write(o.File, data, span{start + len(line), start + len(line)}, "="+s)
		return nil
	}
	p.write(o.File, data, span{start + i + 1, start + len(line)}, s)
	return nil
}

// spliceImage writes the part of an image reference an images entry owns.
func (p *planner) spliceImage(o origin.Origin, via string, old, v interface{}) error {
	oldS, ok1 := old.(string)
	newS, ok2 := v.(string)
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: image values must be strings", ErrUnsupported)
	}
	oldName, oldTag, oldDigest := kustomize.SplitImage(oldS)
	name, tag, digest := kustomize.SplitImage(newS)
	var part string
	switch {
	case strings.HasSuffix(via, "newTag") && name == oldName && digest == oldDigest:
		part = tag
	case strings.HasSuffix(via, "digest") && name == oldName && tag == oldTag:
		part = digest
	case strings.HasSuffix(via, "newName") && tag == oldTag && digest == oldDigest:
		part = name
	default:
		return fmt.Errorf("%w: %s owns only part of %q; %q changes more", ErrUnsupported, via, oldS, newS)
	}
	return p.spliceScalar(o.File, o.Line, o.Column, part)
}

// spliceVariable changes a postBuild.substitute value so the substituted
// string becomes the new value.
func (p *planner) spliceVariable(o origin.Origin, old, v interface{}) error {
	if o.Line == 0 {
		return fmt.Errorf("%w: ${%s} is defined in %s, outside the tree", ErrUnsupported, o.Variable, o.File)
	}
	vars := kustomize.Variables(p.opts.Build)
	oldS, newS := fmt.Sprint(old), fmt.Sprint(v)
	cur := vars[o.Variable]
	i := strings.Index(oldS, cur)
	if i < 0 || !strings.HasPrefix(newS, oldS[:i]) || !strings.HasSuffix(newS, oldS[i+len(cur):]) ||
		len(newS) < len(oldS)-len(cur) {
		return fmt.Errorf("%w: cannot express %q through ${%s}", ErrUnsupported, newS, o.Variable)
	}
	return p.spliceScalar(o.File, o.Line, o.Column, newS[i:len(newS)-(len(oldS)-i-len(cur))])
}
