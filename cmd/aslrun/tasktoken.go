package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// The callback pattern's answers: a .waitForTaskToken Task waits until its
// token comes back through one of these commands.

// answer is what a task-token command sends.
type answer struct {
	cmd    string // task-success, task-failure or task-heartbeat
	output any    // task-success: the Task's result
	// task-failure: the error and its cause.
	errName, cause string
}

func cmdTaskSuccess(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("task-success", flag.ContinueOnError)
	output := fs.String("output", "", "the Task's result: `JSON` text, @FILE or -")
	a := &answer{cmd: fs.Name()}
	return taskAnswer(ctx, c, fs, args, a, func() error {
		if *output == "" {
			return usageErrorf("task-success: --output is required (the Task's result as JSON)")
		}
		var err error
		if a.output, err = c.readInput(*output, inputLimit{bytes: noInputLimit}); err != nil {
			return usageErrorf("task-success: --output: %v", err)
		}
		return nil
	})
}

func cmdTaskFailure(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("task-failure", flag.ContinueOnError)
	a := &answer{cmd: fs.Name()}
	fs.StringVar(&a.errName, "error", "", "the error `E` the Task fails with (States.TaskFailed when not given)")
	fs.StringVar(&a.cause, "cause", "", "its cause `C`")
	return taskAnswer(ctx, c, fs, args, a, nil)
}

func cmdTaskHeartbeat(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("task-heartbeat", flag.ContinueOnError)
	return taskAnswer(ctx, c, fs, args, &answer{cmd: fs.Name()}, nil)
}

// taskAnswer parses the flags every task-token command shares (check, when
// not nil, reads the command's own), opens the database and sends the
// answer. An answer that continues the execution runs it on in this process
// (or, through the API of `aslrun serve`, waits until it is no longer
// RUNNING) and prints it as `aslrun resume` does.
func taskAnswer(ctx context.Context, c *cmdContext, fs *flag.FlagSet, args []string, a *answer, check func() error) error {
	heartbeat := a.cmd == "task-heartbeat"
	var af *agentFlags
	maxPayload := new(int)
	if !heartbeat {
		flags := newAgentFlags(fs, true)
		af, maxPayload = &flags, payloadFlag(fs)
	}
	db := dbFlag(fs)
	pos, err := parseFlags(fs, a.cmd, args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("%s: want exactly one task token, got %d (see \"aslrun %s --help\")", a.cmd, len(pos), a.cmd)
	}
	token := pos[0]
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	var opts engine.ResumeOptions
	if af != nil {
		if opts.Agents, _, _, err = af.load(c); err != nil {
			return err
		}
	}
	h, err := c.open(ctx, *db, accessContinue, holderInfo{API: apiReads, Socket: socketPath(*db)})
	if err != nil {
		return err
	}
	defer h.close()
	var res *engine.Result
	if h.api != nil {
		if err := notThroughAPI(h, fs, a.cmd, "mock", "agents", "max-payload"); err != nil {
			return err
		}
		res, err = a.remote(ctx, h, token)
	} else {
		x, xerr := executor(h.st, nil, *maxPayload)
		if xerr != nil {
			return xerr
		}
		reads := c.startReads(h.st, x, socketPath(*db))
		defer reads.stop(ctx)
		res, err = a.local(ctx, x, token, opts)
	}
	if err != nil {
		var exit *exitError
		switch {
		case errors.As(err, &exit):
			return err
		case errors.Is(err, engine.ErrTaskTokenInvalid):
			return &exitError{code: exitUsage, msg: fmt.Sprintf("%s: %v", a.cmd, err)}
		}
		return engineError(err)
	}
	if res == nil {
		return nil
	}
	printf(c.stderr, "execution: %s\n", res.ID)
	return printResult(c, res)
}

// local sends the answer to the executor of this process; nil result for
// a heartbeat.
func (a *answer) local(ctx context.Context, x *engine.Executor, token string, opts engine.ResumeOptions) (*engine.Result, error) {
	switch a.cmd {
	case "task-success":
		return x.SendTaskSuccess(ctx, token, a.output, opts)
	case "task-failure":
		return x.SendTaskFailure(ctx, token, a.errName, a.cause, opts)
	}
	return nil, x.SendTaskHeartbeat(ctx, token)
}

// remote sends the answer through the API of the server holding the
// database, and waits for the execution it continues.
func (a *answer) remote(ctx context.Context, h *handle, token string) (*engine.Result, error) {
	var (
		e   api.Execution
		err error
	)
	switch a.cmd {
	case "task-success":
		out, merr := jsonvalue.Marshal(a.output)
		if merr != nil {
			return nil, merr
		}
		e, err = h.api.SendTaskSuccess(ctx, api.TaskSuccess{Token: token, Output: out})
	case "task-failure":
		e, err = h.api.SendTaskFailure(ctx, api.TaskFailure{Token: token, Error: a.errName, Cause: a.cause})
	default:
		if err := h.api.SendTaskHeartbeat(ctx, token); err != nil {
			return nil, remoteError(h, err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, remoteError(h, err)
	}
	res, err := h.wait(ctx, e.ID)
	if err != nil {
		if err := remoteInterrupted(ctx, e.ID); err != nil {
			return nil, err
		}
	}
	return res, err
}
