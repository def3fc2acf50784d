package itemio

import (
	"os"
	"syscall"
)

// pseudoFile reports whether f is a file of a pseudo file system (or
// its file system cannot be told).
func pseudoFile(f *os.File) bool {
	sc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	var st syscall.Statfs_t
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return true
	}
	// The types (statfs f_type) of procfs, sysfs, debugfs, tracefs,
	// securityfs, cgroup, cgroup2, configfs, efivarfs and bpf: the kernel's
	// pseudo file systems, whose files show the process and the machine.
	switch int64(st.Type) {
	case 0x9fa0, 0x62656572, 0x64626720, 0x74726163, 0x73636673, 0x27e0eb, 0x63677270, 0x62656570, 0xde5e81e4, 0xcafe4a11:
		return true
	}
	return false
}
