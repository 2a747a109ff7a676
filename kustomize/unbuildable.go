package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	generator "github.com/fluxcd/pkg/kustomize"
	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// kustomizationFiles are the file names krusty loads as a kustomization.
var kustomizationFiles = map[string]bool{"kustomization.yaml": true, "kustomization.yml": true, "Kustomization": true}

// unbuildable is one kustomization entry reflux never fetches or runs.
type unbuildable struct {
	file   string // relative to the work copy, slash separated
	field  string // resources, helmCharts, transformers...
	entry  string // the entry's value; empty for a whole field
	remote bool
}

// dropUnbuildable finds, in the work copy, every kustomization entry that
// asks for what reflux never fetches or runs: remote resources entries,
// helmCharts, and generator, transformer or validator plugins other than
// kustomize's builtins. kustomize-controller fails on these offline (or
// with --no-remote-bases), and krusty's error fails the whole tree with
// temp paths in it. With write set the entries are dropped from the copy,
// so the local part renders and the origin index maps its fields while
// refusing what the dropped entries would have rendered (issue 12).
func dropUnbuildable(work string, write bool) ([]unbuildable, error) {
	var found []unbuildable
	err := filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !kustomizationFiles[d.Name()] {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(work, p)
		out, dropped := dropFromKustomization(filepath.Dir(p), filepath.ToSlash(rel), data)
		found = append(found, dropped...)
		if len(dropped) == 0 || !write {
			return nil
		}
		// Write a new file rather than through the old one's inode.
		tmp := p + ".reflux-tmp"
		if err := os.WriteFile(tmp, out, 0o644); err != nil {
			return fmt.Errorf("rewriting %s: %w", rel, err)
		}
		return os.Rename(tmp, p)
	})
	return found, err
}

// dropFromKustomization returns the kustomization without its unbuildable
// entries, and what it dropped. A file that does not parse is left as it
// is, for krusty to report.
func dropFromKustomization(dir, rel string, data []byte) ([]byte, []unbuildable) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	m := doc.Content[0]
	var dropped []unbuildable
	var keep []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		field, v := m.Content[i].Value, m.Content[i+1]
		drop := func(s *yaml.Node) { dropped = append(dropped, unbuildable{file: rel, field: field, entry: s.Value}) }
		switch strings.ToLower(field) {
		case "helmcharts", "helmchartinflationgenerator", "helmglobals":
			dropped = append(dropped, unbuildable{file: rel, field: field})
			continue
		case "resources", "bases":
			filterSeq(v, func(s *yaml.Node) bool {
				if generator.IsLocalRelativePath(s.Value) {
					return true
				}
				dropped = append(dropped, unbuildable{file: rel, field: field, entry: s.Value, remote: true})
				return false
			})
		case "generators", "transformers", "validators":
			filterSeq(v, func(s *yaml.Node) bool {
				if IsBuiltinPlugin(dir, s.Value) {
					return true
				}
				drop(s)
				return false
			})
		}
		keep = append(keep, m.Content[i], v)
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	m.Content = keep
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&doc); err != nil || enc.Close() != nil {
		return nil, nil
	}
	return buf.Bytes(), dropped
}

// filterSeq keeps the items of a sequence node for which keep holds.
func filterSeq(v *yaml.Node, keep func(*yaml.Node) bool) {
	if v.Kind != yaml.SequenceNode {
		return
	}
	var out []*yaml.Node
	for _, it := range v.Content {
		if keep(it) {
			out = append(out, it)
		}
	}
	v.Content = out
}

// ErrRemoteBase is returned by Build for a tree with a remote base when
// neither AllowRemoteBases nor SkipUnbuildable is set: reflux never fetches
// one behind the caller's back.
var ErrRemoteBase = errors.New("remote base")

// refuseRemote returns ErrRemoteBase naming the first remote entry.
func refuseRemote(found []unbuildable) error {
	for _, u := range found {
		if u.remote {
			return fmt.Errorf("%w: %s: %s entry %s is fetched from the network, which reflux never does; "+
				"trace with the local part only, or vendor the base", ErrRemoteBase, u.file, u.field, u.entry)
		}
	}
	return nil
}

// BuildError is a krusty failure, its message made readable: paths of the
// temporary build copy are shown relative to the source root, on one line.
type BuildError struct {
	Msg string
	Err error
}

// Error returns the cleaned message.
func (e *BuildError) Error() string { return "kustomize build failed: " + e.Msg }

// Unwrap returns krusty's error.
func (e *BuildError) Unwrap() error { return e.Err }

func buildError(err error, work string) error {
	msg := strings.ReplaceAll(err.Error(), work+string(filepath.Separator), "")
	msg = strings.ReplaceAll(msg, work, ".")
	return &BuildError{Msg: strings.Join(strings.Fields(msg), " "), Err: err}
}

// IsBuiltinPlugin reports whether a generators/transformers/validators
// entry of the kustomization in dir (a file, a directory's kustomization,
// or an inline document) configures one of kustomize's builtin plugins,
// which Flux's SecureBuild runs. Anything else, an exec or container KRM
// function included, needs plugins krusty has disabled: kustomize-controller
// fails the build ("only builtin plugins are allowed").
func IsBuiltinPlugin(dir, entry string) bool {
	data := []byte(entry)
	if !strings.Contains(entry, "\n") {
		p := filepath.Join(dir, entry)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return true // a kustomization of plugin configs: krusty reports what is wrong in it
		}
		var err error
		if data, err = os.ReadFile(p); err != nil {
			return true // missing: krusty reports it
		}
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var tm struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &tm); err == nil && tm.APIVersion != "" && tm.APIVersion != "builtin" {
			return false
		}
	}
	return true
}
