package main

import "syscall"

// childAttrs makes the kernel kill reflux if the demo dies without tearing
// down, and gives it its own process group: Ctrl-C in the terminal then
// reaches only the demo, which stops reflux in order while the apiserver
// it talks to is still up.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
