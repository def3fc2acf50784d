//go:build unix

package builtin

import (
	"os/exec"
	"syscall"
)

// killProcessGroup starts cmd in a process group of its own and makes the
// cancellation of its context kill that whole group, so that the children
// a command started (a shell's pipeline, a script's helpers) die with it.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
