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

// ImageMatches reports whether an images entry named name rewrites image:
// kustomize's image.IsImageMatched without its regexp, so the name part of
// image must be name exactly.
func ImageMatches(image, name string) bool {
	n, _, _ := SplitImage(image)
	return n == name && !strings.ContainsAny(strings.TrimPrefix(image, name), "/")
}

// SetImage returns image as an images entry with these fields rewrites
// it, an empty field being unset. Like kustomize's imagetag updater, a new
// tag or digest replaces both the old tag and the old digest.
func SetImage(image, newName, newTag, digest string) string {
	name, tag, dig := SplitImage(image)
	if newName != "" {
		name = newName
	}
	switch {
	case newTag != "" && digest != "":
		tag, dig = newTag, digest
	case newTag != "":
		tag, dig = newTag, ""
	case digest != "":
		tag, dig = "", digest
	}
	if tag != "" {
		name += ":" + tag
	}
	if dig != "" {
		name += "@" + dig
	}
	return name
}
