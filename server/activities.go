package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Activities: workers beside the engine long-poll for the tasks of an
// activity (Step Functions' GetActivityTask) and answer them through the
// task-token routes (tasktokens.go).

const (
	// maxPollWait bounds a poll's wait, and is the wait of a poll that
	// names none (as GetActivityTask waits up to 60 s).
	maxPollWait = 60 * time.Second
	// maxWorkerName bounds a worker's name, as AWS does.
	maxWorkerName = 80
)

// pollActivity hands the next task of an activity to the worker asking
// (200 with the task) or, when none came within the wait, answers 204.
// It ends early, with 204, when the server stops.
func (s *Server) pollActivity(w http.ResponseWriter, r *http.Request) error {
	poll, err := readPoll(r)
	if err != nil {
		return err
	}
	name, wait := poll.name, poll.wait
	stop, _, ok := s.streams.enter()
	if !ok {
		return errStopping
	}
	defer s.streams.open.Done()
	ctx, cancel := context.WithTimeout(r.Context(), wait+time.Second)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	task, err := s.x.PollActivity(ctx, name, engine.PollOptions{Worker: poll.worker, Wait: wait, Find: s.activityExecutions})
	if err != nil {
		return err
	}
	if task == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	in := raw(task.Input)
	if in == nil {
		in = []byte("null")
	}
	writeJSON(w, http.StatusOK, api.ActivityTask{TaskToken: task.Token, Input: in, Execution: task.Execution, State: task.State})
	return nil
}

// poll is a poll request, read and checked.
type poll struct {
	name, worker string
	wait         time.Duration
}

// readPoll reads a poll request: the activity's name (the path), the
// wait (?wait=, seconds) and the body (the worker's name).
func readPoll(r *http.Request) (poll, error) {
	p := poll{name: r.PathValue("name"), wait: maxPollWait}
	if !engine.ValidActivityName(p.name) {
		return p, badRequest("", "%q is not an activity name: 1 to 80 letters, digits, '-', '_' and '.' (the NAME of arn:aws:states:REGION:ACCOUNT:activity:NAME)", p.name)
	}
	if v := r.URL.Query().Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > int(maxPollWait/time.Second) {
			return p, badRequest("", "wait %q is not a number of seconds from 0 to %d", v, int(maxPollWait/time.Second))
		}
		p.wait = time.Duration(n) * time.Second
	}
	var req api.ActivityPoll
	if err := decodeBody(r, &req); err != nil {
		return p, err
	}
	if err := checkWorkerName(req.WorkerName); err != nil {
		return p, err
	}
	p.worker = req.WorkerName
	return p, nil
}

// checkWorkerName refuses a worker name that is too long or holds control
// characters.
func checkWorkerName(name string) error {
	if n := len([]rune(name)); n > maxWorkerName {
		return badRequest("/workerName", "workerName has %d characters, more than %d", n, maxWorkerName)
	}
	for _, c := range name {
		if unicode.IsControl(c) || c == unicode.ReplacementChar {
			return badRequest("/workerName", "workerName %q holds a control character or invalid UTF-8", name)
		}
	}
	return nil
}

// activityExecutions lists the executions waiting at a Task of an
// activity, as every poll of this server finds them (engine.PollOptions).
func (s *Server) activityExecutions(ctx context.Context) ([]string, error) {
	list, err := s.st.List(ctx, store.ListOptions{Status: engine.StatusWaiting})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, sum := range list {
		if engine.WaitsForActivity(sum.WaitingFor) {
			ids = append(ids, sum.ID)
		}
	}
	return ids, nil
}

// listActivities counts the tasks of each activity that wait for a worker
// or are held by one, in the executions waiting for them.
func (s *Server) listActivities(w http.ResponseWriter, r *http.Request) error {
	ids, err := s.activityExecutions(r.Context())
	if err != nil {
		return err
	}
	var list []*engine.Execution
	for _, id := range ids {
		e, err := s.st.Load(r.Context(), id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		list = append(list, e)
	}
	out := api.ActivityList{Activities: []api.Activity{}}
	for _, c := range engine.CountActivities(list) {
		out.Activities = append(out.Activities, api.Activity{Name: c.Activity, Pending: c.Pending, Started: c.Started})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
