package jsonptr

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
)

// Equal reports whether two decoded JSON or YAML values are the same.
// Numbers compare by value whatever their Go type (int, int64, uint64,
// float64, json.Number, ...): the same replica count arrives as int64 from
// unstructured and yaml.v3 and as float64 from encoding/json. Maps and
// slices compare element by element with the same rule; anything else
// compares with reflect.DeepEqual. NaN equals nothing, as with ==.
func Equal(a, b any) bool {
	if x, ok := toNumber(a); ok {
		y, ok := toNumber(b)
		return ok && x.equal(y)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// number is a decoded number held exactly: an int64, a float64, or, for
// integers an int64 cannot hold, a big.Int.
type number struct {
	kind numKind
	i    int64
	f    float64
	big  *big.Int
}

type numKind int

const (
	intNum numKind = iota
	floatNum
	bigNum
)

func toNumber(v any) (number, bool) {
	switch n := v.(type) {
	case int:
		return number{kind: intNum, i: int64(n)}, true
	case int8:
		return number{kind: intNum, i: int64(n)}, true
	case int16:
		return number{kind: intNum, i: int64(n)}, true
	case int32:
		return number{kind: intNum, i: int64(n)}, true
	case int64:
		return number{kind: intNum, i: n}, true
	case uint:
		return fromUint(uint64(n)), true
	case uint8:
		return fromUint(uint64(n)), true
	case uint16:
		return fromUint(uint64(n)), true
	case uint32:
		return fromUint(uint64(n)), true
	case uint64:
		return fromUint(n), true
	case float32:
		return number{kind: floatNum, f: float64(n)}, true
	case float64:
		return number{kind: floatNum, f: n}, true
	case json.Number:
		return fromText(string(n))
	}
	return number{}, false
}

func fromUint(u uint64) number {
	if u <= math.MaxInt64 {
		return number{kind: intNum, i: int64(u)}
	}
	return number{kind: bigNum, big: new(big.Int).SetUint64(u)}
}

// fromText reads a json.Number: an integer exactly, anything else as the
// float64 encoding/json would decode it to, so json.Number("0.1") equals
// 0.1.
func fromText(s string) (number, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number{kind: intNum, i: i}, true
	}
	if b, ok := new(big.Int).SetString(s, 10); ok {
		return number{kind: bigNum, big: b}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return number{}, false
	}
	return number{kind: floatNum, f: f}, true
}

func (x number) equal(y number) bool {
	switch {
	case x.kind == intNum && y.kind == intNum:
		return x.i == y.i
	case x.kind == floatNum && y.kind == floatNum:
		return x.f == y.f
	case x.kind == floatNum:
		return y.equalFloat(x.f)
	case y.kind == floatNum:
		return x.equalFloat(y.f)
	}
	return x.toBig().Cmp(y.toBig()) == 0
}

// equalFloat compares an integer with a float exactly: converting the
// integer to float64 instead would call 2^53 and 2^53+1 equal.
func (x number) equalFloat(f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return false
	}
	if x.kind == intNum && f >= -(1<<63) && f < 1<<63 {
		return int64(f) == x.i
	}
	bf, _ := big.NewFloat(f).Int(nil)
	return x.toBig().Cmp(bf) == 0
}

func (x number) toBig() *big.Int {
	if x.kind == bigNum {
		return x.big
	}
	return big.NewInt(x.i)
}
