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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ee.msg != "" {
			for _, line := range strings.Split(ee.msg, "\n") {
				fmt.Fprintln(os.Stderr, "aslrun: "+line)
			}
		}
		os.Exit(ee.code)
	default:
		fmt.Fprintln(os.Stderr, "aslrun: "+err.Error())
		os.Exit(2)
	}
}
