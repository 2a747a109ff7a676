//go:build unix

package testenv

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Pause stops the process with SIGSTOP, as a VM pause, a long GC or a
// throttled container stops it: it keeps its sockets and its memory, and
// its clock jumps when Continue resumes it. A leader paused past its
// lease's duration wakes up believing it still leads.
func (p *Process) Pause() error {
	return p.signal(syscall.SIGSTOP)
}

// Continue resumes a process Pause stopped.
func (p *Process) Continue() error {
	return p.signal(syscall.SIGCONT)
}

func (p *Process) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending %s to %s: %w", sig, p.Name, err)
	}
	return nil
}
