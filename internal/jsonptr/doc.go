// Package jsonptr reads and writes RFC 6901 JSON pointers and compares the
// decoded JSON and YAML values they point at.
//
// The drift engine, the origin index, the edit planner and write-back all
// name fields by JSON pointer, and all of them compare values decoded by
// different decoders (encoding/json gives float64, yaml.v3 and
// unstructured give int64). One implementation keeps them in agreement: a
// pointer built by one package resolves the same way in every other, and
// 3, int64(3) and 3.0 are the same value everywhere.
package jsonptr
