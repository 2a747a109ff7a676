// Package testkeys makes throwaway signing keys for tests and checks
// commit signatures with the real git and gpg binaries.
package testkeys
