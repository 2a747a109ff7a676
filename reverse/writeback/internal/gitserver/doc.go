// Package gitserver runs fluxcd/pkg/gittestserver for tests over HTTP with
// basic auth or over SSH, seeds repositories and makes "human" commits with
// the real git binary, so write-back tests exercise real Git servers.
package gitserver
