//go:build unix

package files

import "syscall"

// openFlags are added when a file or folder is opened to be read: a
// named pipe swapped in after its stat then cannot block the open.
const openFlags = syscall.O_NONBLOCK
