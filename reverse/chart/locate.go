package chart

import (
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// Location is a line of a chart's template sources.
type Location struct {
	// File is relative to the top chart: templates/deployment.yaml,
	// templates/_helpers.tpl, charts/db/templates/sts.yaml.
	File string
	// Line is 1-based; 0 when nothing was found.
	Line int
}

// sources are a chart's template files, its dependencies' included.
type sources struct {
	files []srcFile
}

type srcFile struct {
	path  string // relative to the top chart
	dir   string // the chart it belongs to: "" or "charts/db/"
	lines []string
}

func newSources(ch *chartv2.Chart) *sources {
	s := &sources{}
	var add func(c *chartv2.Chart, dir string)
	add = func(c *chartv2.Chart, dir string) {
		for _, t := range c.Templates {
			if t != nil {
				s.files = append(s.files, srcFile{path: dir + t.Name, dir: dir, lines: strings.Split(string(t.Data), "\n")})
			}
		}
		for _, d := range c.Dependencies() {
			add(d, dir+"charts/"+d.Name()+"/")
		}
	}
	add(ch, "")
	sort.Slice(s.files, func(i, j int) bool { return s.files[i].path < s.files[j].path })
	return s
}

// order lists the files a field of an object rendered from template may
// come from: template itself, then its chart's partials (_helpers.tpl,
// where include and named templates live), then its chart's others.
func (s *sources) order(template string) []*srcFile {
	dir := chartDir(template)
	var own, partials, others []*srcFile
	for i := range s.files {
		f := &s.files[i]
		switch {
		case f.dir != dir:
		case f.path == template:
			own = append(own, f)
		case strings.HasPrefix(path.Base(f.path), "_"):
			partials = append(partials, f)
		default:
			others = append(others, f)
		}
	}
	return append(append(own, partials...), others...)
}

// chartDir is the chart directory a rendered template path is in.
func chartDir(template string) string {
	if i := strings.LastIndex(template, "templates/"); i >= 0 {
		return template[:i]
	}
	return ""
}

// lines lists f's line indexes in the order a field of an object of kind
// rendered from template is looked for: when f is template, from the
// start of the document that declares kind ("kind: RoleBinding") to the
// end, then the lines before; otherwise in order. A template that
// renders several objects then answers for the right one, unless two of
// them have the same kind.
func (f *srcFile) order(template, kind string) []int {
	start := 0
	if f.path == template && kind != "" {
		decl := regexp.MustCompile(`^kind:\s*["']?` + regexp.QuoteMeta(kind) + `["']?\s*$`)
		for i, line := range f.lines {
			if decl.MatchString(strings.TrimSpace(line)) {
				break
			}
			if strings.TrimSpace(line) == "---" {
				start = i + 1
			}
			if i == len(f.lines)-1 {
				start = 0 // no declaration: the whole file, in order
			}
		}
	}
	out := make([]int, 0, len(f.lines))
	for i := start; i < len(f.lines); i++ {
		out = append(out, i)
	}
	for i := 0; i < start; i++ {
		out = append(out, i)
	}
	return out
}

// locKey is what a key's location depends on.
type locKey struct {
	leaf     int
	template string
	kind     string
}

// locate finds where the templates read leaf i, for an object of kind
// rendered from template, and remembers it.
func (a *Analysis) locate(i int, template, kind string) Location {
	k := locKey{leaf: i, template: template, kind: kind}
	if l, ok := a.locs[k]; ok {
		return l
	}
	l := a.src.key(a.leaves[i].steps, template, kind)
	a.locs[k] = l
	return l
}

// key finds the first line that reads the key as .Values.<names> (also
// $.Values.<names>), trying the whole dotted key first and then ever
// shorter prefixes: toYaml .Values.resources, or with .Values.image,
// reads resources.limits.memory or image.tag from a line that does not
// name them. A prefix counts only where nothing longer follows it, so
// .Values.image.pullPolicy does not read image.tag. Names stop at the
// first list index or name dot syntax cannot write (index .Values "a-b").
// A dependency's key loses the dependency's name, as its own templates
// read it.
func (s *sources) key(steps []step, template, kind string) Location {
	names := refNames(steps, chartDir(template))
	files := s.order(template)
	for n := len(names); n >= 1; n-- {
		re := regexp.MustCompile(`\.Values\.` + regexp.QuoteMeta(strings.Join(names[:n], ".")) + `(?:[^A-Za-z0-9_.]|$)`)
		for _, f := range files {
			for _, li := range f.order(template, kind) {
				if re.MatchString(f.lines[li]) {
					return Location{File: f.path, Line: li + 1}
				}
			}
		}
	}
	return Location{}
}

// ident is a name .Values.a.b syntax can write.
var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// refNames returns the names a template of the chart in dir reads steps
// by: the leading names up to the first that dot syntax cannot write,
// less the dependency path of dir (charts/db/ reads db.x as x).
func refNames(steps []step, dir string) []string {
	var chain []string
	for _, p := range strings.Split(dir, "charts/") {
		if p = strings.Trim(p, "/"); p != "" {
			chain = append(chain, p)
		}
	}
	if len(steps) > len(chain) {
		strip := true
		for i, c := range chain {
			strip = strip && steps[i].index < 0 && steps[i].name == c
		}
		if strip {
			steps = steps[len(chain):]
		}
	}
	var names []string
	for _, s := range steps {
		if s.index >= 0 || !ident.MatchString(s.name) {
			break
		}
		names = append(names, s.name)
	}
	return names
}

// literal finds the line of template, or of its chart's partials, that
// writes value for the field at ptr: the first that holds "name:" (the
// field's own name) and the value's text, or, for a list element, the
// value's text alone. It is a text search, so it can land on another
// field that holds the same text after the same name.
func (s *sources) literal(template, kind, ptr string, value any) Location {
	if !isScalar(value) {
		return Location{}
	}
	want := text(value)
	if want == "" {
		return Location{}
	}
	toks, _ := jsonptr.Split(ptr)
	if f := s.file(template); f != nil {
		// A key's line names it; a list element's need not.
		if line, ok := structural(f, template, kind, toks); ok && (isIndex(lastToken(toks)) || strings.Contains(f.lines[line-1], lastToken(toks))) {
			return Location{File: f.path, Line: line}
		}
	}
	name := ""
	if len(toks) > 0 {
		if _, err := strconv.Atoi(toks[len(toks)-1]); err != nil {
			name = toks[len(toks)-1] + ":"
		}
	}
	for _, f := range s.order(template) {
		if f.path != template && !strings.HasPrefix(path.Base(f.path), "_") {
			continue
		}
		for _, li := range f.order(template, kind) {
			if line := f.lines[li]; strings.Contains(line, want) && strings.Contains(line, name) {
				return Location{File: f.path, Line: li + 1}
			}
		}
	}
	return Location{}
}

// file returns the source of template; nil when there is none.
func (s *sources) file(template string) *srcFile {
	for i := range s.files {
		if s.files[i].path == template {
			return &s.files[i]
		}
	}
	return nil
}

// lastToken is the pointer's last token, "" for the root.
func lastToken(toks []string) string {
	if len(toks) == 0 {
		return ""
	}
	return toks[len(toks)-1]
}

// isIndex tells whether a pointer token is a list index.
func isIndex(tok string) bool {
	_, err := strconv.Atoi(tok)
	return err == nil
}

// readName is a field read by dot syntax: .Values, .password.
var readName = regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_]*)`)

// readOnLine lists the names template reads, as .name, on the lines that
// write the field at ptr ("password:" for /data/password). A list element
// has no name to find its line by, and gets none.
func (s *sources) readOnLine(template, ptr string) []string {
	toks, _ := jsonptr.Split(ptr)
	if len(toks) == 0 {
		return nil
	}
	if _, err := strconv.Atoi(toks[len(toks)-1]); err == nil {
		return nil
	}
	key := toks[len(toks)-1] + ":"
	var out []string
	for i := range s.files {
		f := &s.files[i]
		if f.path != template {
			continue
		}
		for _, line := range f.lines {
			if strings.Contains(line, key) {
				for _, m := range readName.FindAllStringSubmatch(line, -1) {
					out = append(out, m[1])
				}
			}
		}
	}
	return out
}
