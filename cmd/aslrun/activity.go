package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// cmdActivityPoll waits for the next task of an activity and prints it as
// the HTTP API does ({"taskToken", "input", "execution", "state"}), so
// that a shell script can be a worker: it answers with task-success,
// task-failure and task-heartbeat. No task within the wait exits 3.
func cmdActivityPoll(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("activity-poll", flag.ContinueOnError)
	worker := fs.String("worker", "", "this worker's `NAME` (workerName in the ActivityStarted event)")
	wait := fs.Duration("wait", client.MaxPollWait, "how long to wait for a task (up to 60s)")
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "activity-poll", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("activity-poll: want exactly one activity NAME, got %d (see \"aslrun activity-poll --help\")", len(pos))
	}
	name := pos[0]
	switch {
	case !engine.ValidActivityName(name):
		return usageErrorf("activity-poll: %q is not an activity name: 1 to 80 letters, digits, '-', '_' and '.' (the NAME of arn:aws:states:REGION:ACCOUNT:activity:NAME)", name)
	case *wait < 0 || *wait > client.MaxPollWait || *wait%time.Second != 0:
		return usageErrorf("activity-poll: --wait %v is not a whole number of seconds from 0s to %v", *wait, client.MaxPollWait)
	}
	h, err := c.open(ctx, *db, accessRun, holderInfo{API: apiReads, Socket: socketPath(*db)})
	if err != nil {
		return err
	}
	defer h.close()
	var task api.ActivityTask
	found := false
	if h.api != nil {
		if task, found, err = h.api.PollActivity(ctx, name, *worker, *wait); err != nil {
			return remoteError(h, err)
		}
	} else {
		x, err := executor(h.st, nil, 0)
		if err != nil {
			return err
		}
		t, err := x.PollActivity(ctx, name, engine.PollOptions{Worker: *worker, Wait: *wait, Find: waitingForActivities(h.st)})
		if err != nil {
			return engineError(err)
		}
		if t != nil {
			in, err := jsonvalue.Marshal(t.Input)
			if err != nil {
				return err
			}
			task, found = api.ActivityTask{TaskToken: t.Token, Input: in, Execution: t.Execution, State: t.State}, true
		}
	}
	if !found {
		return &exitError{code: exitWaiting, msg: fmt.Sprintf("activity-poll: no task of activity %s came within %v", name, *wait)}
	}
	out, err := json.Marshal(task)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s\n", out)
	return nil
}

// waitingForActivities lists the executions of st waiting at a Task of an
// activity (engine.PollOptions.Find).
func waitingForActivities(st store.Store) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		list, err := st.List(ctx, store.ListOptions{Status: engine.StatusWaiting})
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, s := range list {
			if engine.WaitsForActivity(s.WaitingFor) {
				ids = append(ids, s.ID)
			}
		}
		return ids, nil
	}
}
