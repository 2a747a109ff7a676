package origin

import (
	"encoding/base64"
	"fmt"
	"os"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// genSpec is one configMapGenerator or secretGenerator entry.
type genSpec struct {
	via       string
	name      string
	namespace string
	behavior  string
	typ       string
	literals  []*yaml.Node
	envs      []string
	files     []*yaml.Node
	noHash    *bool
	meta      genMeta
	// nameAt and namespaceAt are the generator's name: and namespace:
	// lines, which declare the generated object's identity.
	nameAt, namespaceAt Layer
}

// genMeta are the labels and annotations a generator puts on its object.
type genMeta struct {
	labels, annotations []kv
}

type genOptions struct {
	noHash bool
	meta   genMeta
}

func (k *kfile) parseGenOptions(v *yaml.Node) genOptions {
	d := mapValue(v, "disableNameSuffixHash")
	return genOptions{noHash: d != nil && d.Value == "true", meta: k.parseGenMeta(v, "generatorOptions")}
}

func (k *kfile) parseGenMeta(v *yaml.Node, via string) genMeta {
	var m genMeta
	if n := mapValue(v, "labels"); n != nil {
		m.labels = k.pairs(n, KindLabels, via+".labels")
	}
	if n := mapValue(v, "annotations"); n != nil {
		m.annotations = k.pairs(n, KindAnnotations, via+".annotations")
	}
	return m
}

func (k *kfile) parseGenerators(v *yaml.Node, via string) ([]genSpec, error) {
	var out []genSpec
	for i, it := range v.Content {
		g := genSpec{via: fmt.Sprintf("%s[%d]", via, i)}
		str := func(key string) string {
			if n := mapValue(it, key); n != nil {
				return n.Value
			}
			return ""
		}
		g.name, g.namespace, g.behavior, g.typ = str("name"), str("namespace"), str("behavior"), str("type")
		for key, at := range map[string]*Layer{"name": &g.nameAt, "namespace": &g.namespaceAt} {
			if n := mapValue(it, key); n != nil {
				*at = Layer{File: k.path, Line: n.Line, Column: n.Column, Kind: KindGeneratorName, Via: g.via + "." + key}
			}
		}
		if n := mapValue(it, "literals"); n != nil {
			g.literals = n.Content
		}
		if n := mapValue(it, "files"); n != nil {
			g.files = n.Content
		}
		if n := mapValue(it, "envs"); n != nil {
			g.envs = strList(n)
		}
		if e := str("env"); e != "" {
			g.envs = append(g.envs, e)
		}
		if o := mapValue(it, "options"); o != nil {
			if d := mapValue(o, "disableNameSuffixHash"); d != nil {
				b := d.Value == "true"
				g.noHash = &b
			}
			g.meta = k.parseGenMeta(o, g.via+".options")
		}
		out = append(out, g)
	}
	return out, nil
}

// generate builds the object of a generator entry with every data value
// pointing at its literal, env-file line or source file.
func (b *builder) generate(k *kfile, g genSpec, kind string) (*object, error) {
	root := newMap()
	gen := Layer{Kind: KindGeneratorLiteral, refused: ReasonGenerated}
	root.set("apiVersion", newScalar("v1", gen))
	root.set("kind", newScalar(kind, gen))
	// kustomize's MergeGlobalOptionsIntoLocal: a global
	// disableNameSuffixHash: true wins over a generator's false.
	hashed := !k.genOptions.noHash && (g.noHash == nil || !*g.noHash)
	md := root.ensureMap("metadata")
	// The name line declares the name verbatim unless a hash is appended;
	// then it is still the place a user edits, so the layer keeps it.
	name := g.nameAt
	if hashed {
		name.refused = ReasonHashSuffix
	}
	md.set("name", newScalar(g.name, name))
	if g.namespace != "" {
		md.set("namespace", newScalar(g.namespace, g.namespaceAt))
	}
	for _, m := range []genMeta{k.genOptions.meta, g.meta} {
		for _, p := range m.labels {
			md.ensureMap("labels").setScalar(p.key, p.value, p.layer)
		}
		for _, p := range m.annotations {
			md.ensureMap("annotations").setScalar(p.key, p.value, p.layer)
		}
	}
	if kind == "Secret" {
		t := g.typ
		if t == "" {
			t = "Opaque"
		}
		root.set("type", newScalar(t, gen))
	}
	data := newMap()
	if err := b.genData(k, g, data, kind == "Secret"); err != nil {
		return nil, fmt.Errorf("%s %s: %w", g.via, g.name, err)
	}
	if len(data.keys) > 0 {
		root.set("data", data)
	}
	o := newObject(root)
	o.generated = true
	o.hashed = hashed
	return o, nil
}

func (b *builder) genData(k *kfile, g genSpec, data *node, secret bool) error {
	put := func(key, val string, l Layer) {
		if secret {
			val = encodeBase64(val)
		}
		data.set(key, newScalar(val, l))
	}
	for _, lit := range g.literals {
		key, val, ok := strings.Cut(lit.Value, "=")
		if !ok {
			return fmt.Errorf("literal %q is not KEY=VALUE", lit.Value)
		}
		put(key, unquote(val), Layer{File: k.path, Line: lit.Line, Column: lit.Column, Kind: KindGeneratorLiteral, Via: g.via + ".literals"})
	}
	for _, env := range g.envs {
		if err := b.genEnv(k, g, env, put); err != nil {
			return err
		}
	}
	for _, f := range g.files {
		key, src, ok := strings.Cut(f.Value, "=")
		if !ok {
			key, src = path.Base(f.Value), f.Value
		}
		p := path.Join(k.dir, src)
		b.otherFiles = markRead(b.otherFiles, p)
		content, err := os.ReadFile(b.abs(p))
		if err != nil {
			return err
		}
		put(key, string(content), Layer{File: p, Line: 1, Column: 1, Kind: KindGeneratorFile, Via: g.via + ".files"})
	}
	return nil
}

// genEnv reads an env file like kustomize's KV loader (api v0.21.1,
// kv.keyValuesFromLine): blank lines and comments are skipped, and a line
// without "=" is a key with the empty value; the process environment is
// never read.
func (b *builder) genEnv(k *kfile, g genSpec, env string, put func(string, string, Layer)) error {
	p := path.Join(k.dir, env)
	b.otherFiles = markRead(b.otherFiles, p)
	content, err := os.ReadFile(b.abs(p))
	if err != nil {
		return err
	}
	for i, line := range strings.Split(string(content), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
		col := 1 + utf8.RuneCountInString(line[:len(line)-len(trimmed)])
		l := Layer{File: p, Line: i + 1, Column: col, Kind: KindGeneratorEnv, Via: g.via + ".envs"}
		key, val, _ := strings.Cut(trimmed, "=")
		put(key, val, l)
	}
	return nil
}

// unquote strips one pair of matching quotes, as kustomize does for literals.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// runGenerators adds, merges or replaces generated objects.
func (b *builder) runGenerators(k *kfile, objs []*object) ([]*object, error) {
	for _, pair := range []struct {
		specs []genSpec
		kind  string
	}{{k.configMapGenerators, "ConfigMap"}, {k.secretGenerators, "Secret"}} {
		for _, g := range pair.specs {
			o, err := b.generate(k, g, pair.kind)
			if err != nil {
				return nil, err
			}
			objs, err = mergeGenerated(objs, o, g)
			if err != nil {
				return nil, err
			}
		}
	}
	return objs, nil
}

func mergeGenerated(objs []*object, o *object, g genSpec) ([]*object, error) {
	if g.behavior == "" || g.behavior == "create" {
		return append(objs, o), nil
	}
	for _, base := range objs {
		if base.kind() != o.kind() || !base.hadName(g.name) || !sameNamespace(base.id().namespace, g.namespace) && g.namespace != "" {
			continue
		}
		data := o.root.get("data")
		switch g.behavior {
		case "replace":
			base.root.del("data")
			if data != nil {
				base.root.set("data", data)
			}
		case "merge":
			if data != nil {
				bd := base.root.ensureMap("data")
				for _, key := range data.keys {
					bd.set(key, overlay(bd.get(key), data.fields[key]))
				}
			}
		default:
			return nil, fmt.Errorf("%s: unknown behavior %q", g.via, g.behavior)
		}
		base.hashed = base.hashed || o.hashed
		return objs, nil
	}
	// kustomize found the generator to merge into or replace (the build
	// succeeded), so the model lacks it: the keys this generator adds are
	// refused as not in the model, and the rest of the tree stays mapped
	// (issue 21 §2).
	return objs, nil
}

// encodeBase64 encodes like kyaml's datamap: lines of 70 characters, each
// ending in a newline, once the encoding is longer than one line.
func encodeBase64(s string) string {
	const lineLen = 70
	enc := base64.StdEncoding.EncodeToString([]byte(s))
	if len(enc) < lineLen {
		return enc
	}
	var sb strings.Builder
	for i := 0; i < len(enc); i += lineLen {
		sb.WriteString(enc[i:min(i+lineLen, len(enc))])
		sb.WriteByte('\n')
	}
	return sb.String()
}
