// Package repository declares the Git client interface the write-back
// engine depends on, so tests and future implementations (a provider API,
// a different Git library) can stand in for go-git.
package repository
