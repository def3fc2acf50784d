//go:build linux

package builtin

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"
)

// runCommand runs the command newCmd builds, confined as iso says, and
// returns how it was confined:
//
//   - isolateAuto first starts it as process 1 of a PID namespace of its
//     own (with a user namespace mapping the caller's user and group to
//     themselves when aslrun does not run as root). When that process
//     ends, for any reason, the kernel kills every process left in the
//     namespace, so nothing the command started outlives it. If the
//     system refuses namespaces (no privilege, a container's seccomp
//     profile, user namespaces disabled), it falls back to
//     isolateGroup;
//   - isolateGroup starts it in a process group of its own, which is
//     killed when the command ends: its background children die, those
//     that left the group (setsid) do not.
//
// Both give the command a parent-death signal (SIGKILL when the thread
// that started it ends: if aslrun dies, even by SIGKILL, the command dies
// too — and with it its namespace, but not the rest of its group), and
// both kill the whole group when the call is cancelled or times out
// (cmd.Cancel). The returned error is that of Start or Wait.
func runCommand(newCmd func() *exec.Cmd, iso isolation) (isolation, error) {
	type result struct {
		used isolation
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// The parent-death signal follows the thread that started the
		// child, not the process (go.dev/issue/27505), and a goroutine
		// that ends while locked to its thread ends the thread: so this
		// goroutine keeps the thread for itself until the command has
		// ended, and no other goroutine can end it meanwhile.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		used, err := runLocked(newCmd, iso)
		done <- result{used, err}
	}()
	r := <-done
	return r.used, r.err
}

// runLocked starts the command, trying each confinement of iso in turn
// while the system refuses it, waits for it, and kills what it left.
func runLocked(newCmd func() *exec.Cmd, iso isolation) (isolation, error) {
	var cmd *exec.Cmd
	var err error
	used := iso
	for _, try := range attempts(iso) {
		cmd, used = newCmd(), try
		cmd.SysProcAttr = sysProcAttr(try)
		c := cmd
		cmd.Cancel = func() error { return killGroup(c.Process.Pid) }
		if err = cmd.Start(); err == nil || !namespaceRefused(err) {
			break
		}
	}
	if err != nil {
		return used, err
	}
	// Kill what the command left in its group as soon as it exits, while
	// it is not reaped yet: until Wait reaps it, its id, which is the
	// group's, cannot be taken by another process. The leftovers die, so
	// they no longer hold its output open, and Wait returns at once.
	if waitExited(cmd.Process.Pid) == nil {
		_ = killGroup(cmd.Process.Pid) // ESRCH: nothing was left
	}
	return used, cmd.Wait()
}

// attempts returns the confinements to try, in order.
func attempts(iso isolation) []isolation {
	if iso == isolateAuto {
		return []isolation{isolateAuto, isolateGroup}
	}
	return []isolation{iso}
}

// sysProcAttr returns the attributes of a confinement.
func sysProcAttr(iso isolation) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	uid, gid := os.Getuid(), os.Getgid()
	switch {
	case iso == isolateGroup:
	case iso == isolateAuto && uid == 0:
		attr.Cloneflags = syscall.CLONE_NEWPID
	default: // isolateAuto as another user, or isolateUserNamespace
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	return attr
}

// namespaceRefused reports whether Start failed because the system does
// not let aslrun create namespaces.
func namespaceRefused(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EPERM, syscall.EACCES, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS, syscall.ENOSYS} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// killGroup kills process group pgid.
func killGroup(pgid int) error {
	return syscall.Kill(-pgid, syscall.SIGKILL)
}

// pPID is waitid's idtype for one process (P_PID).
const pPID = 1

// waitExited blocks until process pid has exited, without reaping it.
func waitExited(pid int) error {
	var info [128]byte // a siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			if errno != 0 {
				return errno
			}
			return nil
		}
	}
}
