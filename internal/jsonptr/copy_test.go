package jsonptr

import (
	"reflect"
	"testing"
)

func TestCopy(t *testing.T) {
	in := map[string]any{"data": map[string]any{"a": "1"}, "list": []any{int64(1), map[string]any{"b": 2.5}}}
	out := Copy(in).(map[string]any)
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("Copy = %v, want %v", out, in)
	}
	out["data"].(map[string]any)["a"] = "changed"
	out["list"].([]any)[1].(map[string]any)["b"] = "changed"
	if in["data"].(map[string]any)["a"] != "1" {
		t.Error("the original's maps are shared with the copy")
	}
	if in["list"].([]any)[1].(map[string]any)["b"] != 2.5 {
		t.Error("the maps inside the original's slices are shared with the copy")
	}
	if Copy("x") != "x" || Copy(nil) != nil {
		t.Error("a scalar is not returned as it is")
	}
}
