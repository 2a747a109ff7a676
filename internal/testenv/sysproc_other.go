//go:build !linux

package testenv

import "syscall"

// childAttrs has no parent-death signal outside Linux; Env.Stop ends the
// children instead.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
