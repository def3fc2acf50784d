package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/aslrun/aslrun/engine"
)

// The callback pattern's answers: a .waitForTaskToken Task waits until its
// token comes back through one of these. They need the store itself (the
// HTTP API has no task-token routes), so a server holding the database
// refuses them.

func cmdTaskSuccess(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("task-success", flag.ContinueOnError)
	output := fs.String("output", "", "the Task's result: `JSON` text, @FILE or -")
	return taskAnswer(ctx, c, fs, args, func(tc *tokenCall) error {
		if *output == "" {
			return usageErrorf("task-success: --output is required (the Task's result as JSON)")
		}
		out, err := c.readInput(*output)
		if err != nil {
			return usageErrorf("task-success: --output: %v", err)
		}
		tc.res, err = tc.x.SendTaskSuccess(ctx, tc.token, out, tc.opts)
		return err
	})
}

func cmdTaskFailure(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("task-failure", flag.ContinueOnError)
	errName := fs.String("error", "", "the error `E` the Task fails with (States.TaskFailed when not given)")
	cause := fs.String("cause", "", "its cause `C`")
	return taskAnswer(ctx, c, fs, args, func(tc *tokenCall) (err error) {
		tc.res, err = tc.x.SendTaskFailure(ctx, tc.token, *errName, *cause, tc.opts)
		return err
	})
}

func cmdTaskHeartbeat(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("task-heartbeat", flag.ContinueOnError)
	return taskAnswer(ctx, c, fs, args, func(tc *tokenCall) error {
		return tc.x.SendTaskHeartbeat(ctx, tc.token)
	})
}

// tokenCall is what a task-token command's answer needs, and its result
// (nil for a heartbeat).
type tokenCall struct {
	x     *engine.Executor
	token string
	opts  engine.ResumeOptions
	res   *engine.Result
}

// taskAnswer parses the flags every task-token command shares, opens the
// database and sends the answer: the execution then runs on in this
// process and its result is printed as `aslrun resume` prints it.
func taskAnswer(ctx context.Context, c *cmdContext, fs *flag.FlagSet, args []string, send func(*tokenCall) error) error {
	name := fs.Name()
	heartbeat := name == "task-heartbeat"
	var af *agentFlags
	maxPayload := new(int)
	if !heartbeat {
		flags := newAgentFlags(fs, true)
		af, maxPayload = &flags, payloadFlag(fs)
	}
	db := dbFlag(fs)
	pos, err := parseFlags(fs, name, args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("%s: want exactly one task token, got %d (see \"aslrun %s --help\")", name, len(pos), name)
	}
	tc := &tokenCall{token: pos[0]}
	if af != nil {
		reg, _, _, err := af.load(c)
		if err != nil {
			return err
		}
		tc.opts.Agents = reg
	}
	h, err := c.open(ctx, *db, accessLocal, holderInfo{API: apiReads, Socket: socketPath(*db)})
	if err != nil {
		return err
	}
	defer h.close()
	tc.x = executor(h.st, nil, *maxPayload)
	reads := c.startReads(h.st, tc.x, socketPath(*db))
	defer reads.stop(ctx)
	if err := send(tc); err != nil {
		var exit *exitError
		if errors.As(err, &exit) {
			return err
		}
		if errors.Is(err, engine.ErrTaskTokenInvalid) {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("%s: %v", name, err)}
		}
		return engineError(err)
	}
	if tc.res == nil {
		return nil
	}
	fmt.Fprintf(c.stderr, "execution: %s\n", tc.res.ID)
	return printResult(c, tc.res)
}
