//go:build !unix

package builtin

import "os/exec"

// runCommand runs the command newCmd builds with os/exec's defaults:
// cancelling the context kills the command's process (not the processes
// it started). iso is ignored; the result is always isolateNone.
func runCommand(newCmd func() *exec.Cmd, _ isolation) (isolation, error) {
	return isolateNone, newCmd().Run()
}
