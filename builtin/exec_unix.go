//go:build unix && !linux

package builtin

import (
	"os/exec"
	"syscall"
)

// runCommand runs the command newCmd builds in a process group of its
// own, which is killed when the call is cancelled or times out
// (cmd.Cancel) and when the command has ended, so that the children it
// started (a shell's pipeline, a script's helpers) die with it; those
// that left the group (setsid) do not. This system has no parent-death
// signal nor PID namespaces: a command outlives an aslrun killed with
// SIGKILL. iso is ignored; the result is always isolateGroup.
func runCommand(newCmd func() *exec.Cmd, _ isolation) (isolation, error) {
	cmd := newCmd()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	if err := cmd.Start(); err != nil {
		return isolateGroup, err
	}
	err := cmd.Wait()
	// The group outlives its leader while members remain, so its id is
	// still theirs.
	_ = killGroup(cmd.Process.Pid)
	return isolateGroup, err
}

// killGroup kills process group pgid.
func killGroup(pgid int) error {
	return syscall.Kill(-pgid, syscall.SIGKILL)
}
