package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
)

// Exit codes of every command.
const (
	exitFailed  = 1 // the execution failed, or a check found problems
	exitUsage   = 2 // bad usage, invalid definition or input
	exitWaiting = 3 // the execution is waiting (Approval, long Wait)
	// A command stopped by a signal exits with 128 + the signal's number,
	// as shells expect: 130 for SIGINT (Ctrl-C), 143 for SIGTERM.
	exitSignalBase = 128
)

// signalled is the cause of a command's context cancelled by a signal.
type signalled struct{ sig syscall.Signal }

func (s *signalled) Error() string { return "interrupted by " + s.sig.String() }

// interrupted turns an error of a command whose context a signal cancelled
// into the signal's exit code and a message saying how to go on with the
// execution id, when there is one; nil when no signal stopped it.
func interrupted(ctx context.Context, id string) error {
	var s *signalled
	if !errors.As(context.Cause(ctx), &s) {
		return nil
	}
	msg := s.Error()
	if id != "" {
		msg += fmt.Sprintf(": execution %s stopped at its last commit; continue it with `aslrun resume %s`", id, id)
	}
	return &exitError{code: exitSignalBase + int(s.sig), msg: msg}
}

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
	// serveReads makes a run, resume or approve holding the database
	// serve reads and decisions on its socket meanwhile (see
	// serveReads). run sets it; tests that run commands inside a
	// synctest bubble, where a listener would stop the clock, do not.
	serveReads bool
	// log, when set, is the logger of the store open opens (serve sets it,
	// so that a PostgreSQL store's warnings take its format); nil is
	// slog's default.
	log *slog.Logger
}

func commands() []*command {
	return []*command{
		{name: "validate", usage: "validate FILE... [--db PATH]", summary: "check workflow definitions and report every problem", run: cmdValidate},
		{name: "run", usage: "run FILE [--input JSON|@FILE|-] [--mock FILE | --agents FILE [--allow-host PATTERN]... [--only-allowed-hosts]] [--name ID] [--follow] [--no-prompt] [--max-payload BYTES] [--allow-file-buckets] [--max-item-bytes BYTES] [--max-listed-objects N] [--durability strict|batched|none] [--keep-child-history] [--db PATH|:memory:]", summary: "run a workflow durably and print its output", run: cmdRun},
		{name: "resume", usage: "resume ID [--from-checkpoint NAME [--fork [--name ID]] [--restore document|memory|both]] [--mock FILE | --agents FILE] [--max-payload BYTES] [--allow-file-buckets] [--max-item-bytes BYTES] [--max-listed-objects N] [--db PATH]", summary: "continue an execution, or roll it back or fork it from a checkpoint", run: cmdResume},
		{name: "approve", usage: "approve ID --decision OPTION [--by WHO] [--comment TEXT] [--edit JSON|@FILE|-] [--approval ID] [--digest D] [--mock FILE | --agents FILE] [--max-payload BYTES] [--allow-file-buckets] [--max-item-bytes BYTES] [--max-listed-objects N] [--db PATH]", summary: "decide a pending approval and continue the execution", run: cmdApprove},
		{name: "task-success", usage: "task-success TOKEN --output JSON|@FILE|- [--mock FILE | --agents FILE] [--max-payload BYTES] [--db PATH]", summary: "answer a task token with the Task's result and continue the execution", run: cmdTaskSuccess},
		{name: "task-failure", usage: "task-failure TOKEN [--error E] [--cause C] [--mock FILE | --agents FILE] [--max-payload BYTES] [--db PATH]", summary: "answer a task token with a failure (Retry and Catch apply) and continue the execution", run: cmdTaskFailure},
		{name: "task-heartbeat", usage: "task-heartbeat TOKEN [--db PATH]", summary: "tell a Task waiting for its token that the work goes on (HeartbeatSeconds count again)", run: cmdTaskHeartbeat},
		{name: "activity-poll", usage: "activity-poll NAME [--worker NAME] [--wait DURATION] [--db PATH]", summary: "wait for the next task of an activity and print it with its task token (a worker's poll)", run: cmdActivityPoll},
		{name: "list", usage: "list [--status S] [--limit N] [--json] [--db PATH]", summary: "list executions, newest first", run: cmdList},
		{name: "status", usage: "status ID [--json] [--db PATH]", summary: "show where an execution stands", run: cmdStatus},
		{name: "watch", usage: "watch ID [--db PATH]", summary: "follow an execution until it ends: its history events, one line each, and the text its states stream", run: cmdWatch},
		{name: "history", usage: "history ID [--json] [--verify] [--db PATH]", summary: "show an execution's history, or verify it is untampered", run: cmdHistory},
		{name: "map-runs", usage: "map-runs ID [--children] [--json] [--follow] [--every DURATION] [--db PATH]", summary: "list an execution's Distributed Map runs and their child executions", run: cmdMapRuns},
		{name: "checkpoints", usage: "checkpoints ID [--json] [--db PATH]", summary: "list an execution's checkpoints", run: cmdCheckpoints},
		{name: "serve", usage: "serve [--listen ADDR [--tokens FILE | --insecure] [--tls-cert FILE --tls-key FILE]] [--socket PATH] [--agents FILE] [--allow-host PATTERN]... [--only-allowed-hosts] [--poll DURATION] [--max-concurrent N] [--grace DURATION] [--log-format text|json] [--log-level debug|info|warn|error] [--redact-key FILE] [--max-payload BYTES] [--max-item-bytes BYTES] [--max-listed-objects N] [--durability strict|batched] [--keep-child-history] [--webhook-timeout DURATION] [--db PATH]", summary: "run executions and serve the HTTP API on a unix socket (and TCP)", run: cmdServe},
		{name: "worker", usage: "worker [--poll DURATION] [--max-payload BYTES] [--db PATH]", summary: "another name for serve (the flags it shares: --poll, --max-payload, --db)", run: cmdWorker},
		{name: "memory", usage: "memory [NAMESPACE [KEY]] [--json] [--db PATH]", summary: "list agent memory", run: cmdMemory},
		{name: "feedback", usage: "feedback export [--workflow NAME] [--state NAME] [--execution ID] [--db PATH]", summary: "export the feedback people gave on states' outputs, as JSONL", run: cmdFeedback},
		{name: "cache", usage: "cache ls [--workflow NAME] [--json] [--db PATH] | cache purge KEY|--all [--db PATH]", summary: "list or purge the result cache of Tasks", run: cmdCache},
		{name: "workflow", usage: "workflow register FILE --name NAME [--label 1.2.0] | workflow versions NAME [--json] | workflow alias NAME ALIAS VERSION | workflow alias NAME ALIAS --delete | workflow diff NAME FROM TO [--json]; each with [--db PATH]", summary: "register workflow versions, list them, move their aliases and compare two of them, in the --db's registry", run: cmdWorkflow},
		{name: "migrate", usage: "migrate --db URL", summary: "apply the schema migrations a PostgreSQL database lacks", run: cmdMigrate},
		{name: "copy", usage: "copy --from FILE --to URL [--skip-existing]", summary: "copy a bbolt database's executions, memory and workflows into PostgreSQL, verified", run: cmdCopy},
		{name: "gc", usage: "gc [--db PATH]", summary: "remove expired checkpoints, unreferenced snapshots and expired memory", run: cmdGC},
		{name: "token", usage: "token create NAME --role ROLE [--tokens FILE]", summary: "create a bearer token for aslrun serve, print it once and store its hash", run: cmdToken},
		{name: "graph", usage: "graph FILE [--format dot|mermaid|svg]", summary: "draw a workflow as a Graphviz or Mermaid graph or an SVG picture", run: cmdGraph},
		{name: "conformance", usage: "conformance PATH... [--skip FILE]", summary: "run conformance case files and folders", run: cmdConformance},
		{name: "version", usage: "version", summary: "print aslrun's version, the revision it was built from and the Go version (also --version)", run: cmdVersion},
	}
}

// run is the whole program: it dispatches args to a command.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return dispatch(ctx, &cmdContext{stdin: stdin, stdout: stdout, stderr: stderr, serveReads: true}, args)
}

// dispatch runs the command args name.
func dispatch(ctx context.Context, c *cmdContext, args []string) error {
	stdout, stderr := c.stdout, c.stderr
	if len(args) == 0 {
		printHelp(stderr)
		return &exitError{code: exitUsage}
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		printHelp(stdout)
		return nil
	case "-version", "--version":
		name = "version"
	}
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd.run(ctx, c, args[1:])
		}
	}
	return usageErrorf("unknown command %q (run \"aslrun help\")", name)
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "aslrun runs Agent State Language workflows.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  aslrun %s\n      %s\n", c.usage, c.summary)
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
