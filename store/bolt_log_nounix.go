//go:build !unix

package store

import (
	"errors"
	"os"
	"time"
)

var errWouldBlock = errors.New("locked")

// lockFile fails: the log is not supported without flock.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	return errors.New("the log needs flock, which this system does not have")
}

func unlockFile(f *os.File) {}
