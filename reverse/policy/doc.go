// Package policy checks a ReverseSyncPolicy for what admission (schema and
// CEL) cannot: glob syntax, the commit message template, the signing key
// material and clashes between the branch prefix and real source branches.
package policy
