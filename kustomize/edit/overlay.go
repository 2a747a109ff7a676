package edit

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// listKeys are the merge keys an overlay patch can use to address list
// elements; other lists cannot be patched by strategic merge.
var listKeys = map[string]string{
	"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
	"imagePullSecrets": "name", "volumeMounts": "mountPath",
}

// overlayPatch writes the change as a strategic-merge patch of the built
// overlay, in reflux-KIND-NAME.yaml listed under patches. The patch file
// itself is written by the draft's flush, after every change of the set.
func (p *planner) overlayPatch(ch Change) error {
	kpath, err := p.overlayKustomization()
	if err != nil {
		return err
	}
	body, err := p.patchBody(ch)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("reflux-%s-%s.yaml", strings.ToLower(p.ref.Kind), unhash(p.ref.Kind, p.ref.Name))
	file := path.Join(path.Dir(kpath), name)
	// Read it now so a patch file that does not parse refuses this change,
	// not the whole set at flush.
	if _, _, err := p.patchDoc(file); err != nil {
		return err
	}
	p.patches[file] = append(p.patches[file], body)
	return p.listPatch(kpath, name)
}

// overlayKustomization is the kustomization file of the built directory.
func (p *planner) overlayKustomization() (string, error) {
	if p.res.Generated {
		return "", fmt.Errorf("%w: %s has no kustomization.yaml to hold an overlay patch", ErrShared, p.res.Path)
	}
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		k := path.Join(p.res.Path, n)
		if _, err := os.Stat(filepath.Join(p.root, filepath.FromSlash(k))); err == nil {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w: no kustomization file in %s", ErrShared, p.res.Path)
}

// patchBody builds the patch: the object's identity as the overlay sees
// it (its name as declared in the resource) and the path to the leaf,
// addressing list elements by merge key.
func (p *planner) patchBody(ch Change) (map[string]interface{}, error) {
	u := p.rendered()
	if u == nil {
		return nil, fmt.Errorf("%w: %s not rendered", origin.ErrObjectNotFound, p.ref)
	}
	name, err := p.declared("/metadata/name")
	if err != nil {
		return nil, err
	}
	md := map[string]interface{}{"name": name}
	if ns, err := p.declared("/metadata/namespace"); err == nil {
		md["namespace"] = ns
	}
	body := map[string]interface{}{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": md}
	cur, rv := body, interface{}(u.Object)
	toks, err := jsonptr.Split(ch.Pointer)
	if err != nil || len(toks) == 0 {
		return nil, fmt.Errorf("%w: %q names no field a patch can set", ErrUnsupported, ch.Pointer)
	}
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		m, ok := rv.(map[string]interface{})
		if !ok && rv != nil {
			// nil: a map the change adds (addNested), read as empty.
			return nil, fmt.Errorf("%w: %s is not a map path", ErrUnsupported, ch.Pointer)
		}
		if i == len(toks)-1 {
			cur[tok] = ch.Value
			break
		}
		list, isList := m[tok].([]interface{})
		if !isList {
			cur, rv = childMap(cur, tok), m[tok]
			continue
		}
		// A list element is addressed by its merge key, never its index,
		// and the index token is consumed with it.
		key := listKeys[tok]
		n, err := strconv.Atoi(toks[i+1])
		if key == "" || err != nil || n >= len(list) || i+1 == len(toks)-1 {
			return nil, fmt.Errorf("%w: list %s has no merge key a patch can use", ErrUnsupported, tok)
		}
		elem, _ := list[n].(map[string]interface{})
		item := map[string]interface{}{key: elem[key]}
		cur[tok] = []interface{}{item}
		cur, rv = item, elem
		i++
	}
	return body, nil
}

// childMap returns the map at key in m, creating it.
func childMap(m map[string]interface{}, key string) map[string]interface{} {
	c, ok := m[key].(map[string]interface{})
	if !ok {
		c = map[string]interface{}{}
		m[key] = c
	}
	return c
}

// declared reads the value a field had where its first layer declared it.
func (p *planner) declared(ptr string) (string, error) {
	f, ok := p.field(ptr)
	if !ok || f.Refused != "" || f.Origin.Chain[0].Kind != origin.KindResource {
		return "", fmt.Errorf("%w: cannot tell how the overlay names %s", ErrUnsupported, p.ref)
	}
	l := f.Origin.Chain[0]
	data, err := p.read(l.File)
	if err != nil {
		return "", err
	}
	off, err := p.offset(l.File, l.Line, l.Column)
	if err != nil {
		return "", err
	}
	sp, _, err := scalarSpan(data, off)
	if err != nil {
		return "", err
	}
	var s string
	return s, yaml.Unmarshal(data[sp.start:sp.end], &s)
}

// listPatch adds "- path: name" to the patches list of the kustomization,
// inserting text so the rest of the file is untouched.
func (p *planner) listPatch(kpath, name string) error {
	data, err := p.read(kpath)
	if err != nil {
		return err
	}
	if strings.Contains(string(data), name) {
		return nil
	}
	at, text := appendListItem(data, "patches", "path: "+name)
	p.write(kpath, data, at, text)
	return nil
}

// appendListItem returns the edit that adds an item at the end of a
// top-level block sequence, copying the indentation of its existing
// items, or that appends the key.
func appendListItem(data []byte, key string, item ...string) (span, string) {
	lines := strings.SplitAfter(string(data), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, key+":") {
			start = i
			break
		}
	}
	if start < 0 || strings.TrimSpace(strings.TrimPrefix(lines[start], key+":")) != "" {
		return span{len(data), len(data)}, terminate(data) + key + ":\n" + itemText("  ", item)
	}
	indent, end := "  ", start+1
	for i := start + 1; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if !strings.HasPrefix(lines[i], " ") && !strings.HasPrefix(lines[i], "-") {
			break
		}
		if strings.HasPrefix(t, "- ") && end == start+1 {
			indent = lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		}
		end = i + 1
	}
	return insertBefore(lines, end, itemText(indent, item))
}

// mergeInto merges src into dst; lists of maps merge by their first key.
func mergeInto(dst, src map[string]interface{}) {
	for k, sv := range src {
		switch s := sv.(type) {
		case map[string]interface{}:
			d, ok := dst[k].(map[string]interface{})
			if !ok {
				dst[k] = s
				continue
			}
			mergeInto(d, s)
		case []interface{}:
			dst[k] = mergeLists(dst[k], s, listKeys[k])
		default:
			dst[k] = sv
		}
	}
}

func mergeLists(dst interface{}, src []interface{}, key string) []interface{} {
	d, _ := dst.([]interface{})
	for _, it := range src {
		sm, _ := it.(map[string]interface{})
		found := false
		for _, e := range d {
			if em, ok := e.(map[string]interface{}); ok && sm != nil && key != "" && em[key] == sm[key] {
				mergeInto(em, sm)
				found = true
			}
		}
		if !found {
			d = append(d, it)
		}
	}
	return d
}

// itemText renders a block sequence item whose first line follows "- ".
func itemText(indent string, lines []string) string {
	var sb strings.Builder
	for i, l := range lines {
		if i == 0 {
			sb.WriteString(indent + "- " + l + "\n")
			continue
		}
		sb.WriteString(indent + "  " + l + "\n")
	}
	return sb.String()
}

// overlayEntry writes a replicas or images entry in the overlay when the
// field is one those transformers own. It reports false when it is not.
func (p *planner) overlayEntry(ch Change, old interface{}) (bool, error) {
	kpath, err := p.overlayKustomization()
	if err != nil {
		return false, err
	}
	data, err := p.read(kpath)
	if err != nil {
		return false, err
	}
	switch {
	case ch.Pointer == "/spec/replicas" && replicaKinds[p.ref.Kind]:
		count, ok := ch.Value.(int64)
		name, err := p.declared("/metadata/name")
		if !ok || err != nil || p.noEntries || p.replicasReach(name, count) {
			return false, nil
		}
		at, text := appendListItem(data, "replicas", "name: "+name, fmt.Sprintf("count: %d", count))
		p.write(kpath, data, at, text)
		return true, nil
	case isContainerImage(ch.Pointer):
		oldS, ok1 := old.(string)
		newS, ok2 := ch.Value.(string)
		if !ok1 || !ok2 || p.noEntries {
			return false, nil
		}
		return p.imageEntry(ch.Pointer, kpath, data, oldS, newS)
	}
	return false, nil
}

var replicaKinds = map[string]bool{"Deployment": true, "ReplicaSet": true, "StatefulSet": true, "ReplicationController": true}

func isContainerImage(ptr string) bool {
	toks := strings.Split(ptr, "/")
	n := len(toks)
	return n >= 4 && toks[n-1] == "image" && (toks[n-3] == "containers" || toks[n-3] == "initContainers")
}

// imageEntry adds an images entry for the image name, setting only the
// parts that change. It reports false, and writes nothing, when the entry
// would rewrite another image too.
func (p *planner) imageEntry(ptr, kpath string, data []byte, oldS, newS string) (bool, error) {
	name, tag, digest := kustomize.SplitImage(oldS)
	newName, newTag, newDigest := kustomize.SplitImage(newS)
	var e imageSet
	item := []string{"name: " + name}
	if newName != name {
		e.newName = newName
		item = append(item, "newName: "+newName)
	}
	if newTag != tag && newTag != "" {
		e.newTag = newTag
		item = append(item, "newTag: "+quoteIfNeeded(newTag))
	}
	if newDigest != digest && newDigest != "" {
		e.digest = newDigest
		item = append(item, "digest: "+newDigest)
	}
	if len(item) == 1 || (newTag == "" && tag != "") || (newDigest == "" && digest != "") {
		return true, fmt.Errorf("%w: an images entry cannot express %q", ErrUnsupported, newS)
	}
	if p.imagesReach(ptr, name, e) {
		return false, nil
	}
	at, text := appendListItem(data, "images", item...)
	p.write(kpath, data, at, text)
	return true, nil
}

func quoteIfNeeded(s string) string {
	if plainSafe(s) {
		return s
	}
	return strconv.Quote(s)
}
