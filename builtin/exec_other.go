//go:build !unix

package builtin

import "os/exec"

// killProcessGroup leaves os/exec's default: cancelling the context kills
// the command's process (not the processes it started).
func killProcessGroup(*exec.Cmd) {}
