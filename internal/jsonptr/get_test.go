package jsonptr_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

func TestGet(t *testing.T) {
	var obj map[string]interface{}
	if err := json.Unmarshal([]byte(`{"metadata":{"annotations":{"example.com/owner":"a","t~x":"b"}},
		"spec":{"containers":[{"name":"app","image":"web:1"}],"replicas":3}}`), &obj); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ptr   string
		want  interface{}
		found bool
	}{
		{"/spec/replicas", float64(3), true},
		{"/spec/containers/0/image", "web:1", true},
		{"/metadata/annotations/example.com~1owner", "a", true},
		{"/metadata/annotations/t~0x", "b", true},
		{"/spec/containers/1/image", nil, false},
		{"/spec/containers/-1/image", nil, false},
		{"/spec/containers/x", nil, false},
		{"/spec/replicas/deeper", nil, false},
		{"/missing", nil, false},
		{"spec/replicas", nil, false},
		{"/", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.ptr, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := jsonptr.Get(obj, tt.ptr)
			g.Expect(ok).To(Equal(tt.found))
			if !tt.found {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
	whole, ok := jsonptr.Get(obj, "")
	NewWithT(t).Expect(ok).To(BeTrue())
	NewWithT(t).Expect(whole).To(Equal(obj))
}

func FuzzGet(f *testing.F) {
	f.Add("/spec/containers/0/image")
	f.Add("/a~1b/~0/")
	f.Fuzz(func(t *testing.T, ptr string) {
		obj := map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"image": "x"}}}}
		if v, ok := jsonptr.Get(obj, ptr); !ok && v != nil {
			t.Fatalf("absent value %v for %q", v, ptr)
		}
	})
}

func TestMatches(t *testing.T) {
	g := NewWithT(t)
	g.Expect(jsonptr.Matches(float64(3), "3")).To(BeTrue())
	g.Expect(jsonptr.Matches(int64(3), "3.0")).To(BeTrue())
	g.Expect(jsonptr.Matches("true", `"true"`)).To(BeTrue())
	g.Expect(jsonptr.Matches(true, `"true"`)).To(BeFalse())
	g.Expect(jsonptr.Matches(map[string]interface{}{"a": "b"}, `{"a":"b"}`)).To(BeTrue())
	g.Expect(jsonptr.Matches("x", "not json")).To(BeFalse())
}
