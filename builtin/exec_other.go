//go:build !unix

package builtin

import "os/exec"

// runCommand runs the command newCmd builds with os/exec's defaults:
// cancelling the context kills the command's process (not the processes
// it started). iso is ignored and returned as it is.
func runCommand(newCmd func() *exec.Cmd, iso isolation) (isolation, error) {
	return iso, newCmd().Run()
}
