package jsonptr_test

import (
	"encoding/json"
	"math"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

func TestEqual(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"int64 and float64", int64(3), float64(3), true},
		{"int and int64", 3, int64(3), true},
		{"int32 and float64", int32(-7), float64(-7), true},
		{"uint64 and int64", uint64(5), int64(5), true},
		{"json.Number and int64", json.Number("42"), int64(42), true},
		{"json.Number float and float64", json.Number("0.1"), 0.1, true},
		{"json.Number exponent and int", json.Number("1e3"), 1000, true},
		{"json.Number big and uint64", json.Number("18446744073709551615"), uint64(math.MaxUint64), true},
		{"different numbers", int64(3), float64(3.5), false},
		{"float fraction and int", 2.5, 2, false},
		{"beyond float precision", int64(1<<53 + 1), float64(1 << 53), false},
		{"beyond float precision, same ints", int64(1<<53 + 1), int64(1<<53 + 1), true},
		{"float beyond int64", float64(1 << 63), int64(math.MaxInt64), false},
		{"big uint and float", uint64(1 << 63), float64(1 << 63), true},
		{"NaN", nan, nan, false},
		{"infinity and int", math.Inf(1), int64(math.MaxInt64), false},
		{"number and string", int64(3), "3", false},
		{"string and number", "3", int64(3), false},
		{"strings", "web:1", "web:1", true},
		{"different strings", "web:1", "web:2", false},
		{"bools", true, true, true},
		{"bool and string", true, "true", false},
		{"nils", nil, nil, true},
		{"nil and zero", nil, int64(0), false},
		{"zero and nil", int64(0), nil, false},
		{"maps, numbers by value", map[string]any{"a": int64(1), "b": []any{float64(2)}}, map[string]any{"a": float64(1), "b": []any{int64(2)}}, true},
		{"maps, missing key", map[string]any{"a": int64(1)}, map[string]any{"b": int64(1)}, false},
		{"maps, extra key", map[string]any{"a": int64(1)}, map[string]any{"a": int64(1), "b": nil}, false},
		{"map and slice", map[string]any{}, []any{}, false},
		{"slices, order matters", []any{"a", "b"}, []any{"b", "a"}, false},
		{"slices, length", []any{"a"}, []any{"a", "a"}, false},
		{"nested numbers differ", []any{map[string]any{"n": int64(1)}}, []any{map[string]any{"n": 1.5}}, false},
		{"other types", []string{"a"}, []string{"a"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(jsonptr.Equal(tt.a, tt.b)).To(Equal(tt.want))
			g.Expect(jsonptr.Equal(tt.b, tt.a)).To(Equal(tt.want), "Equal must be symmetric")
		})
	}
}
