package store

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data, and its size when it changed.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
