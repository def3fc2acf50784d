//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// errWouldBlock is lockFile's error when another process holds the lock
// until the timeout.
var errWouldBlock = errors.New("locked")

// lockFile takes an flock on f, exclusive or shared, waiting up to timeout
// for another process to release it.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return errWouldBlock
		}
		time.Sleep(50 * time.Millisecond) // as bbolt polls its own lock
	}
}

// unlockFile releases lockFile's lock.
func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
