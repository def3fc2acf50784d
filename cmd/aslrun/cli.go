package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes of every command.
const (
	exitFailed  = 1 // the execution failed, or a check found problems
	exitUsage   = 2 // bad usage, invalid definition or input
	exitWaiting = 3 // the execution is waiting (Approval, long Wait)
)

// exitError ends the program with code, after printing msg (if any) to
// stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// command is one subcommand of aslrun.
type command struct {
	name    string
	usage   string
	summary string
	run     func(ctx context.Context, c *cmdContext, args []string) error
}

// cmdContext is what a command reads and writes.
type cmdContext struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func commands() []*command {
	return []*command{
		{name: "validate", usage: "validate FILE...", summary: "check workflow definitions and report every problem", run: cmdValidate},
		{name: "run", usage: "run FILE [--input JSON|@FILE|-] [--mock FILE] [--name ID]", summary: "run a workflow to its end and print its output", run: cmdRun},
		{name: "graph", usage: "graph FILE --format dot|mermaid", summary: "draw a workflow as a Graphviz or Mermaid graph", run: cmdGraph},
		{name: "conformance", usage: "conformance PATH...", summary: "run conformance case files and folders", run: cmdConformance},
	}
}

// later lists the commands of the contract that arrive with durable
// executions and the agent-native states.
var later = map[string]string{
	"resume":      "durable executions",
	"approve":     "durable executions and the Approval state",
	"list":        "durable executions",
	"status":      "durable executions",
	"history":     "durable executions",
	"checkpoints": "durable executions",
	"worker":      "durable executions",
	"gc":          "durable executions",
}

// run is the whole program: it dispatches args to a command.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := &cmdContext{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printHelp(stderr)
		return &exitError{code: exitUsage}
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		printHelp(stdout)
		return nil
	}
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd.run(ctx, c, args[1:])
		}
	}
	if what, ok := later[name]; ok {
		return usageErrorf("command %q is not available yet: it arrives with %s", name, what)
	}
	return usageErrorf("unknown command %q (run \"aslrun help\")", name)
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "aslrun runs Agent State Language workflows.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  aslrun %-58s %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run \"aslrun COMMAND --help\" for a command's flags.")
}

// parseFlags parses args with fs, allowing flags before and after the
// positional arguments, and returns the positional arguments. --help prints
// the command's usage and returns errHelp.
func parseFlags(fs *flag.FlagSet, cmd string, args []string, w io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(fs, cmd, w)
				return nil, errHelp
			}
			return nil, usageErrorf("%s: %v (see \"aslrun %s --help\")", cmd, err, cmd)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

var errHelp = errors.New("help shown")

func printUsage(fs *flag.FlagSet, cmd string, w io.Writer) {
	for _, c := range commands() {
		if c.name == cmd {
			fmt.Fprintf(w, "Usage: aslrun %s\n\n%s.\n", c.usage, strings.ToUpper(c.summary[:1])+c.summary[1:])
		}
	}
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", b.String())
	}
}

// handleHelp turns errHelp into a clean exit.
func handleHelp(err error) (bool, error) {
	if errors.Is(err, errHelp) {
		return true, nil
	}
	return false, err
}
