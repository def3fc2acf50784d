//go:build !linux

package sandbox

import (
	"context"
	"errors"
)

// errNotLinux is what every function returns off Linux.
var errNotLinux = errors.New("sandbox: sandboxes need Linux (bubblewrap)")

// Available reports whether this machine can run sandboxes: off Linux,
// never.
func Available() error { return errNotLinux }

// Probe reports whether bwrapPath can run a sandbox: off Linux, never.
func Probe(ctx context.Context, bwrapPath string) error { return errNotLinux }

// Command refuses off Linux: sandboxes need Linux.
func Command(ctx context.Context, spec Spec, argv []string) (*Cmd, error) {
	return nil, errNotLinux
}

func (c *Cmd) enterCgroup() (closeFD func()) {
	c.cgroupErr = errNotLinux
	return func() {}
}

func (c *Cmd) leaveCgroup() error { return nil }
