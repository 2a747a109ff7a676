package origin

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// applyJSON6902 applies a JSON6902 operation list to the object. Values
// keep the positions of the patch's value nodes.
func applyJSON6902(o *object, ops *node) error {
	for i, op := range ops.items {
		var err error
		switch op.str("op") {
		case "add":
			err = jsonAdd(o.root, op.str("path"), op.get("value"), false)
		case "replace":
			err = jsonAdd(o.root, op.str("path"), op.get("value"), true)
		case "remove":
			_, err = jsonRemove(o.root, op.str("path"))
		case "move", "copy":
			var v *node
			v, err = jsonGet(o.root, op.str("from"))
			if err == nil && op.str("op") == "move" {
				_, err = jsonRemove(o.root, op.str("from"))
			}
			if err == nil {
				err = jsonAdd(o.root, op.str("path"), v.clone(), false)
			}
		case "test":
		default:
			err = fmt.Errorf("unknown op %q", op.str("op"))
		}
		if err != nil {
			o.touch() // the ops before it may have renamed the object
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	o.touch()
	return nil
}

// patchPath splits a JSON6902 path into unescaped tokens. "" and "/" both
// address the document root, which applyJSON6902 refuses to patch, and a
// path without its leading slash is read as if it had one: the model has
// always read patch paths this leniently, and the cross-check against
// krusty's render refuses any field it gets wrong.
func patchPath(p string) ([]string, error) {
	if p == "" || p == "/" {
		return nil, nil
	}
	return jsonptr.Split("/" + strings.TrimPrefix(p, "/"))
}

func jsonGet(root *node, ptr string) (*node, error) {
	toks, err := patchPath(ptr)
	if err != nil {
		return nil, err
	}
	n := root
	for _, t := range toks {
		c, err := child(n, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ptr, err)
		}
		n = c
	}
	return n, nil
}

func child(n *node, t string) (*node, error) {
	switch n.kind {
	case mapNode:
		if c := n.get(t); c != nil {
			return c, nil
		}
	case seqNode:
		i, err := strconv.Atoi(t)
		if err == nil && i >= 0 && i < len(n.items) {
			return n.items[i], nil
		}
	}
	return nil, fmt.Errorf("no %q", t)
}

// parentOf returns the container of the pointer's last token.
func parentOf(root *node, ptr string) (*node, string, error) {
	toks, err := patchPath(ptr)
	if err != nil {
		return nil, "", err
	}
	if len(toks) == 0 {
		return nil, "", fmt.Errorf("cannot patch the document root")
	}
	parent, err := jsonGet(root, jsonptr.Join(toks[:len(toks)-1]...))
	return parent, toks[len(toks)-1], err
}

func jsonAdd(root *node, ptr string, v *node, replace bool) error {
	if v == nil {
		return fmt.Errorf("%s: missing value", ptr)
	}
	parent, last, err := parentOf(root, ptr)
	if err != nil {
		return err
	}
	switch parent.kind {
	case mapNode:
		if replace && parent.get(last) == nil {
			return fmt.Errorf("%s: replace of missing key", ptr)
		}
		parent.set(last, overlay(parent.get(last), v))
		return nil
	case seqNode:
		if last == "-" {
			parent.items = append(parent.items, v.clone())
			return nil
		}
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i > len(parent.items) || replace && i == len(parent.items) {
			return fmt.Errorf("%s: bad index", ptr)
		}
		if replace {
			parent.items[i] = overlay(parent.items[i], v)
			return nil
		}
		parent.items = append(parent.items[:i], append([]*node{v.clone()}, parent.items[i:]...)...)
		return nil
	}
	return fmt.Errorf("%s: parent is a scalar", ptr)
}

func jsonRemove(root *node, ptr string) (*node, error) {
	parent, last, err := parentOf(root, ptr)
	if err != nil {
		return nil, err
	}
	c, err := child(parent, last)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ptr, err)
	}
	if parent.kind == mapNode {
		parent.del(last)
		return c, nil
	}
	i, _ := strconv.Atoi(last)
	parent.items = append(parent.items[:i:i], parent.items[i+1:]...)
	return c, nil
}
