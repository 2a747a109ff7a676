package postrender

import (
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/apis/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// imageSets finds the last of images that sets the image at pointer of
// obj, and the key of the entry that changes it: digest, newTag or
// newName, the first the entry has. kustomize changes the image of an
// element of any list named containers or initContainers, when the
// image's name is the entry's name; after it, the name is the entry's
// new name.
func imageSets(images []kustomize.Image, obj *unstructured.Unstructured, pointer string) (int, string, bool) {
	if len(images) == 0 || !imageField(pointer) {
		return 0, "", false
	}
	v, _ := jsonptr.Get(obj.Object, pointer)
	ref, ok := v.(string)
	if !ok {
		return 0, "", false
	}
	name := imageName(ref)
	for j := len(images) - 1; j >= 0; j-- {
		im := images[j]
		to := im.NewName
		if to == "" {
			to = im.Name
		}
		if to != name {
			continue
		}
		switch {
		case im.Digest != "":
			return j, "digest", true
		case im.NewTag != "":
			return j, "newTag", true
		case im.NewName != "":
			return j, "newName", true
		}
	}
	return 0, "", false
}

// imageField reports whether pointer is .../containers/N/image or
// .../initContainers/N/image.
func imageField(pointer string) bool {
	toks, err := jsonptr.Split(pointer)
	if err != nil || len(toks) < 3 || toks[len(toks)-1] != "image" {
		return false
	}
	if _, err := strconv.Atoi(toks[len(toks)-2]); err != nil {
		return false
	}
	list := toks[len(toks)-3]
	return list == "containers" || list == "initContainers"
}

// imageName is an image reference without its tag and digest, split as
// kustomize splits it: a ':' before the first '/' is a registry's port.
func imageName(ref string) string {
	if at := strings.Index(ref, "@"); at >= 0 {
		ref = ref[:at]
	}
	slash := strings.Index(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		ref = ref[:colon]
	}
	return ref
}
