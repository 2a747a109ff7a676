package chart

// copyTree deep-copies a decoded values tree.
func copyTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = copyTree(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyTree(e)
		}
		return l
	}
	return v
}
