package testenv

import "syscall"

// childAttrs makes the kernel kill a child when the test binary dies, so an
// interrupted `go test` leaves no controllers running against a dead
// apiserver.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
