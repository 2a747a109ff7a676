package origin

import "fmt"

// mergeKeys are the strategic-merge keys of the list fields we know. Lists
// not listed here merge by "name" when every element has one (kyaml's rule
// for types without a schema) and are replaced otherwise.
var mergeKeys = map[string]string{
	"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
	"env": "name", "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
	"imagePullSecrets": "name", "hostAliases": "ip", "topologySpreadConstraints": "topologyKey",
	"conditions": "type", "ownerReferences": "uid",
}

// atomicLists are lists the Kubernetes schema marks atomic even though
// their elements carry a name.
var atomicLists = map[string]bool{"envFrom": true, "tolerations": true, "args": true, "command": true}

// mergeKey returns the merge key of list field, or "" to replace the list.
func mergeKey(field string, lists ...*node) string {
	if atomicLists[field] {
		return ""
	}
	if field == "ports" {
		if allHave("containerPort", lists...) {
			return "containerPort"
		}
		return "port"
	}
	if k, ok := mergeKeys[field]; ok {
		return k
	}
	if allHave("name", lists...) {
		return "name"
	}
	return ""
}

func allHave(key string, lists ...*node) bool {
	for _, l := range lists {
		for _, it := range l.items {
			if it.get(key) == nil {
				return false
			}
		}
	}
	return true
}

// mergeSMP merges a strategic-merge patch into the object.
func mergeSMP(o *object, p *node) error {
	if err := mergeMap(o.root, p, "apiVersion", "kind"); err != nil {
		return err
	}
	o.touch()
	return nil
}

// mergeMap merges src into dst. Keys in identity only select what to patch
// (kind, metadata.name, a list element's merge key); when src repeats the
// value they are left alone, so the patch does not claim to set them.
func mergeMap(dst, src *node, identity ...string) error {
	if d := src.get("$patch"); d != nil {
		return fmt.Errorf("$patch: %v on a map is not modelled", d.value)
	}
	for _, key := range src.keys {
		sv := src.fields[key]
		if len(key) > 0 && key[0] == '$' {
			continue // $setElementOrder and friends only reorder
		}
		dv := dst.get(key)
		if isIdentity(key, identity) && dv != nil && dv.kind == scalarNode && sv.kind == scalarNode && dv.value == sv.value {
			continue
		}
		directive := sv.str("$patch")
		switch {
		case sv.kind == scalarNode && sv.value == nil, directive == "delete":
			dst.del(key)
		case directive == "replace":
			dst.set(key, dropDirectives(sv))
		case dv != nil && dv.kind == mapNode && sv.kind == mapNode:
			var sub []string
			if key == "metadata" && len(identity) > 0 {
				sub = []string{"name", "namespace"}
			}
			if err := mergeMap(dv, sv, sub...); err != nil {
				return err
			}
		case dv != nil && dv.kind == seqNode && sv.kind == seqNode:
			if err := mergeSeq(key, dv, sv); err != nil {
				return err
			}
		default:
			dst.set(key, overlay(dv, dropDirectives(sv)))
		}
	}
	return nil
}

func mergeSeq(field string, dst, src *node) error {
	key := mergeKey(field, dst, src)
	if key == "" {
		*dst = *dropDirectives(src)
		return nil
	}
	for _, it := range src.items {
		id := it.get(key)
		if id == nil {
			return fmt.Errorf("list %s: element without merge key %s", field, key)
		}
		i := findItem(dst, key, id.value)
		if d := it.get("$patch"); d != nil && d.value == "delete" {
			if i >= 0 {
				dst.items = append(dst.items[:i:i], dst.items[i+1:]...)
			}
			continue
		}
		if i < 0 {
			dst.items = append(dst.items, dropDirectives(it))
			continue
		}
		if err := mergeMap(dst.items[i], it, key); err != nil {
			return err
		}
	}
	return nil
}

func findItem(list *node, key string, v interface{}) int {
	for i, it := range list.items {
		if k := it.get(key); k != nil && fmt.Sprint(k.value) == fmt.Sprint(v) {
			return i
		}
	}
	return -1
}

// dropDirectives copies a patch fragment without its $ directives.
func dropDirectives(n *node) *node {
	c := n.clone()
	var walk func(*node)
	walk = func(n *node) {
		for _, k := range append([]string(nil), n.keys...) {
			if len(k) > 0 && k[0] == '$' {
				n.del(k)
				continue
			}
			walk(n.fields[k])
		}
		for _, it := range n.items {
			walk(it)
		}
	}
	walk(c)
	return c
}

func isIdentity(key string, identity []string) bool {
	for _, k := range identity {
		if k == key {
			return true
		}
	}
	return false
}
