package kustomize

import "strings"

// SplitImage splits an image reference into name, tag and digest the way
// kustomize's image transformer does: a colon in the registry host (a
// port) is not a tag separator.
func SplitImage(ref string) (name, tag, digest string) {
	search, off := ref, 0
	if i := strings.Index(ref, "/"); i > 0 {
		search, off = ref[i:], i
	}
	name = ref
	if i := strings.Index(search, "@"); i >= 0 {
		name, digest = ref[:off+i], ref[off+i+1:]
		search = search[:i]
	}
	if i := strings.Index(search, ":"); i >= 0 {
		tag = name[off+i+1:]
		name = ref[:off+i]
	}
	return name, tag, digest
}
