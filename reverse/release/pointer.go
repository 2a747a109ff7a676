package release

import (
	"strconv"

	"github.com/wI2L/jsondiff"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// located is where one patch operation's field is: in live (or, for an
// element only the dry run has, in the desired object) and in Git.
type located struct{ pointer, gitPointer string }

// locate numbers each operation's field as reverse/drift numbers fields.
// jsondiff pairs list elements by index and writes its patch to be
// applied in order: it removes the elements of a list longer live one
// after the other at the same index, the first past the end of the
// shorter list, and appends elements only the dry run has at "-"
// (Differ.compareArrays). Pointers name them by their index in live, or
// in the desired list for appended ones; the Git pointer of an element
// only live has is "-", RFC 6902's end of the list. Everything else is
// where the patch says.
func locate(patch jsondiff.Patch, live map[string]any) []located {
	out := make([]located, len(patch))
	removed := map[string]int{}
	appended := map[string]int{}
	for i, op := range patch {
		out[i] = located{op.Path, op.Path}
		parent, last := parent(op.Path), lastToken(op.Path)
		list, isList := listAt(live, parent)
		switch {
		case !isList:
		case op.Type == jsondiff.OperationRemove:
			idx, err := strconv.Atoi(last)
			if err != nil {
				continue
			}
			n := removed[op.Path]
			removed[op.Path]++
			out[i] = located{jsonptr.Append(parent, strconv.Itoa(idx+n)), jsonptr.Append(parent, "-")}
		case op.Type == jsondiff.OperationAdd && last == "-":
			n := appended[parent]
			appended[parent]++
			p := jsonptr.Append(parent, strconv.Itoa(len(list)+n))
			out[i] = located{p, p}
		}
	}
	return out
}

// listAt returns the list at ptr in live, if that is one.
func listAt(live map[string]any, ptr string) ([]any, bool) {
	if ptr == "" {
		return nil, false
	}
	v, ok := jsonptr.Get(live, ptr)
	if !ok {
		return nil, false
	}
	list, ok := v.([]any)
	return list, ok
}

// lastToken returns ptr's last reference token, unescaped.
func lastToken(ptr string) string {
	toks, err := jsonptr.Split(ptr)
	if err != nil || len(toks) == 0 {
		return ""
	}
	return toks[len(toks)-1]
}
