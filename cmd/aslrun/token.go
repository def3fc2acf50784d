package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/aslrun/aslrun/server"
)

// cmdToken manages the bearer tokens of `aslrun serve`: `token create`
// makes one, prints it once and stores only its hash.
func cmdToken(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	roleName := fs.String("role", "", "what the token may do: worker, viewer, approver, operator or admin (required)")
	file := fs.String("tokens", "aslrun.tokens", "the tokens file (made with mode 0600 if missing)")
	pos, err := parseFlags(fs, "token", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) == 0 || pos[0] != "create" {
		return usageErrorf("token: want \"token create NAME --role ROLE\" (see \"aslrun token --help\")")
	}
	if len(pos) != 2 {
		return usageErrorf("token create: want one NAME, got %d arguments", len(pos)-1)
	}
	name := pos[1]
	if *roleName == "" {
		return usageErrorf("token create: --role is required (worker, viewer, approver, operator or admin)")
	}
	role, err := server.ParseRole(*roleName)
	if err != nil {
		return usageErrorf("token create: --role: %v", err)
	}
	path := *file
	tok, err := server.CreateToken(path, name, role)
	if err != nil {
		if errors.Is(err, server.ErrDuplicateName) {
			return usageErrorf("token create: %v; pick another name", err)
		}
		return fmt.Errorf("token create: %w", err)
	}
	fmt.Fprintln(c.stdout, tok)
	fmt.Fprintf(c.stderr, "token %q (role %s) stored as a hash in %s; it cannot be shown again\n", name, role, path)
	return nil
}
