package jsonptr

import (
	"encoding/json"
	"testing"
)

func TestRemove(t *testing.T) {
	doc := `{"metadata":{"annotations":{"a/b":"x","c":"y"}},"env":[{"name":"A"},{"name":"B"},{"name":"C"}]}`
	tests := []struct {
		ptr  string
		ok   bool
		want string
	}{
		{"/metadata/annotations/a~1b", true, `{"metadata":{"annotations":{"c":"y"}},"env":[{"name":"A"},{"name":"B"},{"name":"C"}]}`},
		{"/env/1", true, `{"metadata":{"annotations":{"a/b":"x","c":"y"}},"env":[{"name":"A"},{"name":"C"}]}`},
		{"/env/0/name", true, `{"metadata":{"annotations":{"a/b":"x","c":"y"}},"env":[{},{"name":"B"},{"name":"C"}]}`},
		{"/env/3", false, doc},
		{"/env/x", false, doc},
		{"/metadata/labels/a", false, doc},
		{"/nothing", false, doc},
		{"", false, doc},
	}
	for _, tt := range tests {
		t.Run(tt.ptr, func(t *testing.T) {
			var obj map[string]interface{}
			if err := json.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatal(err)
			}
			if got := Remove(obj, tt.ptr); got != tt.ok {
				t.Fatalf("Remove(%q) = %v, want %v", tt.ptr, got, tt.ok)
			}
			var want map[string]interface{}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !Equal(obj, want) {
				b, _ := json.Marshal(obj)
				t.Fatalf("after Remove(%q): %s, want %s", tt.ptr, b, tt.want)
			}
		})
	}
}
