package origin

import (
	"fmt"
	"strconv"
	"strings"
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
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	o.touch()
	return nil
}

// splitPointer splits a JSON pointer into unescaped tokens.
func splitPointer(p string) []string {
	if p == "" || p == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// escapeToken escapes one JSON pointer token.
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func jsonGet(root *node, ptr string) (*node, error) {
	n := root
	for _, t := range splitPointer(ptr) {
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
	toks := splitPointer(ptr)
	if len(toks) == 0 {
		return nil, "", fmt.Errorf("cannot patch the document root")
	}
	parent, err := jsonGet(root, "/"+strings.Join(escapeAll(toks[:len(toks)-1]), "/"))
	if len(toks) == 1 {
		parent, err = root, nil
	}
	return parent, toks[len(toks)-1], err
}

func escapeAll(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = escapeToken(t)
	}
	return out
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
