package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// maxPage bounds a page of executions or events.
const maxPage = 1000

func (s *Server) validateWorkflow(w http.ResponseWriter, r *http.Request) error {
	var req api.Validate
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if len(req.Definition) == 0 {
		return badRequest("/definition", "definition is required")
	}
	out := api.Validation{Valid: true, Problems: []api.FieldError{}}
	m, err := s.parseDefinition(r.Context(), req.Definition)
	if err != nil {
		var list states.ErrorList
		if !errors.As(err, &list) {
			return badRequest("/definition", "%v", err)
		}
		out.Valid = false
		out.Problems = invalidDefinition(list, "/definition").errors
	} else if list := m.FileBuckets(); len(list) > 0 {
		out.Valid = false
		out.Problems = invalidDefinition(list, "/definition").errors
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// startExecution starts an execution and answers once it exists (201),
// or with the execution already running under that name with the same
// workflow and input (200); the run goes on in the background.
func (s *Server) startExecution(w http.ResponseWriter, r *http.Request) error {
	var req api.StartExecution
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	var m *states.Machine
	// name is the execution's workflow; registry, "name@version", is set
	// only for a registered one (a Task's global cache serves those
	// only).
	var name, registry string
	switch {
	case len(req.Definition) > 0 && req.Workflow != "":
		return badRequest("/workflow", "give a registered workflow or an inline definition, not both")
	case req.MachineName != "" && len(req.Definition) == 0:
		return badRequest("/machineName", "machineName names an inline definition; a registered workflow is named by workflow")
	case len(req.Definition) > 0:
		parsed, err := s.parseDefinition(r.Context(), req.Definition)
		if err != nil {
			var list states.ErrorList
			if errors.As(err, &list) {
				return invalidDefinition(list, "/definition")
			}
			return badRequest("/definition", "%v", err)
		}
		if err := localFolders(parsed, "/definition"); err != nil {
			return err
		}
		m, name = parsed, "StateMachine"
		if req.MachineName != "" {
			if err := store.CheckWorkflowName(req.MachineName); err != nil {
				return badRequest("/machineName", "%v", err)
			}
			name = req.MachineName
		}
	case req.Workflow != "":
		v, err := s.resolveStart(r.Context(), req)
		if err != nil {
			return err
		}
		parsed, err := s.machines.Parse(v.Definition)
		if err != nil {
			return fmt.Errorf("workflow %s version %d no longer parses: %w", v.Name, v.Version, err)
		}
		m, name, registry = parsed, v.Name, fmt.Sprintf("%s@%d", v.Name, v.Version)
	case req.Alias != "" || req.Ref != "":
		return badRequest("/workflow", "alias and ref name a version of a registered workflow: give workflow too")
	default:
		return badRequest("/definition", "give a registered workflow or an inline definition")
	}
	if err := checkExecutionID(req.Name); err != nil {
		return err
	}
	if req.MaxPayload < -1 || req.MaxPayload > maxPayloadCeiling {
		return badRequest("/maxPayload", "maxPayload must be a number of bytes up to %d, 0 (the server's limit) or -1 (no limit), not %d", maxPayloadCeiling, req.MaxPayload)
	}
	if err := s.checkMaxPayload(r, req.MaxPayload); err != nil {
		return err
	}
	switch engine.Durability(req.Durability) {
	case "", engine.DurabilityStrict, engine.DurabilityBatched:
	case engine.DurabilityNone:
		return badRequest("/durability", "durability none keeps nothing, and the server keeps every execution it runs: want strict or batched")
	default:
		return badRequest("/durability", "durability %q: want strict or batched", req.Durability)
	}
	input, err := inputDocument(req.Input, "/input")
	if err != nil {
		return err
	}
	reg := s.agents
	var mock []byte
	if len(req.Mock) > 0 {
		mocks, err := agents.ParseMocks(req.Mock)
		if err != nil {
			var me *agents.MockError
			if errors.As(err, &me) {
				return badRequest("/mock"+me.Pointer, "%s", me.Msg)
			}
			return badRequest("/mock", "%v", err)
		}
		reg = agents.NewRegistry()
		if err := mocks.Register(reg); err != nil {
			return badRequest("/mock", "%v", err)
		}
		mock = req.Mock
	}
	if p := missingAgents(m, reg); p != nil {
		return p
	}
	// A name that is taken is found by the start itself (ErrExists), not
	// looked up first: one read less for every named start.
	opts := engine.StartOptions{ID: req.Name, MachineName: name, Registry: registry, Agents: reg, AgentsFile: mock,
		TraceParent: r.Header.Get("traceparent"), MaxPayloadSize: req.MaxPayload, Durability: engine.Durability(req.Durability)}
	switch {
	case mock != nil:
		opts.AgentsKind = "mock"
	case s.agentsFile != nil:
		opts.AgentsFile, opts.AgentsKind = s.agentsFile, "agents"
	}
	// The answer is the execution as created (Started): nothing to read
	// back.
	var created *engine.Execution
	opts.Started = func(e *engine.Execution) { created = e }
	id, err := s.startRun(r.Context(), m, input, opts)
	var ge *engine.GovernanceError
	switch {
	case err == nil:
		w.Header().Set("Location", "/v1/executions/"+id)
		writeJSON(w, http.StatusCreated, executionOf(created))
		return nil
	case errors.As(err, &ge):
		p := problemOf(err)
		p.errors = []api.FieldError{{Pointer: "/input", Detail: fmt.Sprintf("%s: %s", ge.Violation.Name, ge.Violation.Cause)}}
		return p
	case errors.Is(err, engine.ErrExists):
		// Started meanwhile under the same name.
		if e, lerr := s.st.Load(r.Context(), req.Name); lerr == nil {
			return s.existing(w, e, m, input)
		}
	}
	return err
}

// launch starts an execution that runs in the background (run calls Run
// or Fork with created as its Created), and returns its id once it exists,
// or why it was refused (the input, the name); a ctx that ends first is
// its error, the run going on.
func (s *Server) launch(ctx context.Context, what, name string, run func(ctx context.Context, created func(id string)) (*engine.Result, error)) (string, error) {
	created := make(chan string, 1)
	failed := make(chan error, 1)
	s.background(what, name, func(ctx context.Context) (*engine.Result, error) {
		res, err := run(ctx, func(id string) { created <- id })
		if err != nil {
			failed <- err
		}
		return res, err
	})
	select {
	case id := <-created:
		return id, nil
	case err := <-failed:
		return "", err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// startRun launches an execution of m (see launch).
func (s *Server) startRun(ctx context.Context, m *states.Machine, input any, opts engine.StartOptions) (string, error) {
	return s.launch(ctx, "run", opts.ID, func(ctx context.Context, created func(string)) (*engine.Result, error) {
		opts.Created = created
		return s.x.Run(ctx, m, input, opts)
	})
}

// maxPayloadCeiling is the largest payload limit a start may give an
// execution (1 GiB): past it the limit is a mistake, not a choice.
const maxPayloadCeiling = 1 << 30

// checkMaxPayload refuses a start whose maxPayload (want) raises the
// server's payload limit, above it or to none (-1), unless the caller is
// an admin: an operator may only keep it (0) or lower it.
func (s *Server) checkMaxPayload(r *http.Request, want int) error {
	limit := s.x.MaxPayloadSize()
	if limit < 0 || want == 0 || want > 0 && want <= limit {
		return nil
	}
	p, _ := principalOf(r.Context())
	if p.Role.allows(RoleAdmin) {
		return nil
	}
	msg := fmt.Sprintf("%s has the role %s; a maxPayload of %d raises the server's limit of %d bytes, which needs admin (an operator may give 0, the server's limit, or a lower one)", p.Name, p.Role, want, limit)
	return &problem{status: http.StatusForbidden, kind: "forbidden", title: "forbidden", detail: msg,
		errors: []api.FieldError{{Pointer: "/maxPayload", Detail: msg}}}
}

// existing answers a start whose name is taken: the same workflow and
// input of an execution still running give it back (200); anything else
// is a conflict, as Step Functions does.
func (s *Server) existing(w http.ResponseWriter, e *engine.Execution, m *states.Machine, input any) error {
	hash, err := jsonvalue.CanonicalHash(m.Definition)
	if err != nil {
		return err
	}
	same := e.DefinitionHash == hash && jsonvalue.Equal(e.Input, input)
	switch {
	case e.Status.Ended():
		return &problem{status: http.StatusConflict, kind: "exists", title: "the name is taken",
			detail: fmt.Sprintf("execution %s exists and has ended (%s): a name is used once", e.ID, e.Status)}
	case !same:
		return &problem{status: http.StatusConflict, kind: "exists", title: "the name is taken",
			detail: fmt.Sprintf("execution %s is running with another workflow or input", e.ID)}
	}
	writeJSON(w, http.StatusOK, executionOf(e))
	return nil
}

// missingAgents is a problem naming every agent the machine names that reg
// does not have, or nil.
func missingAgents(m *states.Machine, reg *agents.Registry) *problem {
	var errs []api.FieldError
	for _, ref := range m.AgentRefs() {
		if ref.Resource != "" {
			if name, ok := reg.ResolveResource(ref.Resource, ref.Function, ref.Agent); !ok {
				detail := fmt.Sprintf("Resource %s resolves to no agent of the server", ref.Resource)
				if name != "" {
					detail = fmt.Sprintf("Resource %s is mapped to agent %q, which is neither mocked nor one of the server's agents", ref.Resource, name)
				}
				errs = append(errs, api.FieldError{Pointer: "/definition", State: ref.State, Detail: detail})
			}
			continue
		}
		if _, ok := reg.Lookup(ref.Agent); !ok {
			errs = append(errs, api.FieldError{Pointer: "/definition", State: ref.State,
				Detail: fmt.Sprintf("%s names agent %q, which is neither mocked nor one of the server's agents", ref.Field, ref.Agent)})
		}
	}
	if errs == nil {
		return nil
	}
	return &problem{status: http.StatusUnprocessableEntity, kind: "unknown-agents", title: "unknown agents", detail: fmt.Sprintf("%d agent reference(s) cannot be served", len(errs)), errors: errs}
}

func (s *Server) listExecutions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	opts := store.ListOptions{Status: engine.Status(strings.ToUpper(q.Get("status")))}
	switch opts.Status {
	case "", engine.StatusRunning, engine.StatusWaiting, engine.StatusSucceeded, engine.StatusFailed, engine.StatusTimedOut, engine.StatusAborted:
	default:
		return badRequest("", "status %q is not RUNNING, WAITING, SUCCEEDED, FAILED, TIMED_OUT or ABORTED", q.Get("status"))
	}
	limit, err := pageSize(q.Get("limit"))
	if err != nil {
		return err
	}
	opts.Limit, opts.MachineName, opts.After = limit, q.Get("workflow"), q.Get("after")
	for _, b := range []struct {
		key string
		dst *time.Time
	}{{"startedAfter", &opts.StartedAfter}, {"startedBefore", &opts.StartedBefore}} {
		if v := q.Get(b.key); v != "" {
			if *b.dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return badRequest("", "%s %q must be an RFC 3339 time", b.key, v)
			}
		}
	}
	list, err := s.st.List(r.Context(), opts)
	if errors.Is(err, engine.ErrNotFound) && opts.After != "" {
		return badRequest("", "after %q names no execution: use the next cursor of the previous page", opts.After)
	}
	if err != nil {
		return err
	}
	out := api.ExecutionList{Executions: []api.Execution{}}
	for _, sum := range list {
		x, err := s.listed(r.Context(), sum)
		if err != nil {
			return err
		}
		out.Executions = append(out.Executions, x)
	}
	if len(list) == limit {
		out.Next = list[len(list)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// pageSize reads ?limit=: 1 to maxPage, 100 when absent.
func pageSize(v string) (int, error) {
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPage {
		return 0, badRequest("", "limit %q must be a number from 1 to %d", v, maxPage)
	}
	return n, nil
}

func (s *Server) getExecution(w http.ResponseWriter, r *http.Request) error {
	e, err := s.st.Load(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := executionOf(e)
	if out.Progress, err = s.progressOf(r.Context(), e); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// progressOf is how far e is (engine.ProgressOf over its history) when
// its workflow has an enabled top-level Progress block; nil otherwise,
// without reading the history. A definition that no longer parses has
// none, nor has an execution whose history was dropped.
func (s *Server) progressOf(ctx context.Context, e *engine.Execution) (*api.ExecutionProgress, error) {
	if e.HistoryDropped {
		return nil, nil
	}
	m, err := s.machines.Parse(e.Definition)
	if err != nil || !progressEnabled(m) {
		return nil, nil
	}
	history, err := s.st.History(ctx, e.ID)
	if err != nil {
		return nil, fmt.Errorf("the progress of execution %s: %w", e.ID, err)
	}
	p := engine.ProgressOf(m, history)
	return &api.ExecutionProgress{Percentage: p.Percentage, Completed: p.Completed, Total: p.Total}, nil
}

// progressEnabled reports whether m has an enabled top-level Progress
// block.
func progressEnabled(m *states.Machine) bool {
	return m != nil && m.Extensions != nil && m.Extensions.Progress != nil && m.Extensions.Progress.Enabled
}

func (s *Server) getHistory(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	limit, err := pageSize(q.Get("limit"))
	if err != nil {
		return err
	}
	after := int64(0)
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return badRequest("", "after %q must be an event's seq", v)
		}
	}
	out := api.History{Events: []api.Event{}}
	if q.Get("verify") == "true" {
		if err := s.st.VerifyHistory(r.Context(), id); err != nil {
			return err
		}
		out.Verified = true
	}
	// Only the page is read: its events and the documents they show.
	events, total, err := s.st.HistoryRange(r.Context(), id, after, limit)
	if err != nil {
		return err
	}
	for i, e := range events {
		out.Events = append(out.Events, eventOf(after+int64(i)+1, e))
	}
	if last := after + int64(len(out.Events)); last < total {
		out.Next = strconv.FormatInt(last, 10)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// eventOf is a history event as the API shows it, seq its 1-based place
// in the execution's history.
func eventOf(seq int64, e engine.Event) api.Event {
	return api.Event{Seq: seq, ID: e.ID, Own: e.Own, Type: e.Type, Timestamp: e.Timestamp, State: e.State, Scope: e.Scope,
		Input: raw(e.Input), Output: raw(e.Output), Error: e.Error, Cause: e.Cause, Detail: raw(e.Detail), DocHash: e.DocHash, Hash: e.Hash, Superseded: e.Superseded}
}

// resumeExecution continues an execution in the background (after a
// crash, or a timer not yet due: then nothing changes).
func (s *Server) resumeExecution(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	if e.Status.Ended() {
		return fmt.Errorf("execution %s: %w (%s)", id, engine.ErrEnded, e.Status)
	}
	s.background("resume", id, func(ctx context.Context) (*engine.Result, error) { return s.x.Resume(ctx, id, engine.ResumeOptions{}) })
	writeJSON(w, http.StatusAccepted, executionOf(e))
	return nil
}

// executionOf is an execution as the API shows it.
func executionOf(e *engine.Execution) api.Execution {
	out := api.Execution{ID: e.ID, Workflow: e.MachineName, Hash: e.DefinitionHash, Status: string(e.Status), StartedAt: e.StartedAt,
		StoppedAt: timePtr(e.StoppedAt), Error: e.Error, Cause: e.Cause, WaitingFor: e.WaitingFor, WakeAt: timePtr(e.WakeAt), Parent: e.Parent, Approvals: []api.Approval{},
		MaxPayload: e.MaxPayload, Durability: string(e.Durability), HistoryDropped: e.HistoryDropped}
	if e.Status == engine.StatusSucceeded {
		out.Output = raw(e.Output)
		if out.Output == nil {
			out.Output = json.RawMessage("null")
		}
	}
	if top := e.Progress.Scopes[""]; top != nil && !e.Status.Ended() {
		out.State = top.Next
	}
	for _, pa := range engine.PendingOf(e) {
		out.Approvals = append(out.Approvals, approvalOf(e.ID, pa))
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
