//go:build !linux

package main

import "syscall"

// childAttrs gives reflux its own process group so Ctrl-C reaches only the
// demo, which stops reflux in order. Only Linux can also tie reflux's life
// to the demo's.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
