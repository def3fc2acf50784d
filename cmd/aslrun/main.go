// Command aslrun validates, runs and inspects Agent State Language
// workflows. Run "aslrun help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first SIGINT or SIGTERM stops the command at its last commit
		// (see interrupted); a second one ends the process at once.
		sig := <-sigs
		cancel(&signalled{sig: sig.(syscall.Signal)})
		sig = <-sigs
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ee.msg != "" {
			for _, line := range strings.Split(ee.msg, "\n") {
				fmt.Fprintln(os.Stderr, "aslrun: "+termSafe(line))
			}
		}
		os.Exit(ee.code)
	default:
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "aslrun: "+termSafe(line))
		}
		os.Exit(2)
	}
}
