package jsonptr

// Copy deep-copies a decoded JSON or YAML value: its maps and slices are
// new, anything else is shared (strings, numbers and booleans are values).
// Unlike runtime.DeepCopyJSONValue it accepts any Go number type, as the
// values reflux compares come from unstructured, yaml.v3 and
// encoding/json alike.
func Copy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = Copy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Copy(e)
		}
		return out
	}
	return v
}
