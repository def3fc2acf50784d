package server

// The execution page: an execution's summary, graph, timeline and
// checkpoints, and the operator's controls (rollback, fork, stop, resume,
// redrive), each confirmed before it acts.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// eventView is a history event as the execution page shows it.
type eventView struct {
	Seq                 int64
	Type, State, Error  string
	Time                time.Time
	Flagged, Superseded bool
	// Input, Output, Detail and Cause are cut to maxShown bytes, with a
	// link to the whole.
	Input, Output, Detail, Cause payloadView
	// Changes is what a state changed: the JSON Patch from its input
	// (the entered event's) to its output (the exited event's).
	Changes []changeView
	// Usage is what an agent call consumed, on the event of its outcome;
	// nil when its agent reported nothing.
	Usage *usageView
	// Child is the child execution a ChildExecutionStarted, Ended or
	// Stopped event names (pages_execution_children.go); nil on other
	// events.
	Child *childLink
}

// changeView is one operation of a state's changes, as shown.
type changeView struct {
	Op, Path string
	Value    payloadView
}

// flagged are the events a reader must not miss: refusals of the
// workflow's governance, guardrails and tool policies.
func flagged(e engine.Event) bool {
	switch e.Type {
	case engine.EventGovernanceViolation, engine.EventToolDenied, engine.EventBudgetExceeded:
		return true
	case engine.EventGuardrail:
		return e.Error != ""
	}
	return false
}

// compactValue writes a patch operation's value on one line ("" for none).
func compactValue(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return string(v)
	}
	return buf.String()
}

// streamEvents are the event names of an execution's stream, for the
// page's script to listen to (an EventSource has no catch-all).
func streamEvents() string {
	names := []string{engine.EventExecutionStarted, engine.EventExecutionSucceeded, engine.EventExecutionFailed, engine.EventExecutionTimedOut,
		engine.EventExecutionAborted, engine.EventExecutionResumed, engine.EventExecutionRedriven, engine.EventExecutionRolledBack,
		engine.EventExecutionForked, engine.EventForkedTo, engine.EventTaskScheduled, engine.EventTaskStarted, engine.EventTaskSucceeded,
		engine.EventTaskFailed, engine.EventTaskTimedOut, engine.EventApprovalRequested, engine.EventApprovalEscalated,
		engine.EventApprovalDecided, engine.EventApprovalTimedOut, engine.EventGovernanceViolation, engine.EventGuardrail,
		engine.EventReasoning, engine.EventCheckpointSaved, engine.EventContext, engine.EventDebateRound, engine.EventMemoryRead,
		engine.EventMemoryWritten, engine.EventToolDenied, engine.EventToolRateLimited, engine.EventBudgetAlert, engine.EventBudgetExceeded,
		engine.EventBudgetOverridden, engine.EventMapIterationStart, engine.EventMapIterationOK, engine.EventMapIterationFailed,
		engine.EventMapStateStarted, engine.EventMapStateSucceeded, engine.EventMapStateFailed, engine.EventParallelStarted,
		engine.EventParallelSucceeded, engine.EventParallelFailed, engine.EventTaskSubmitted, engine.EventActivityScheduled,
		engine.EventActivityStarted, engine.EventActivitySucceeded, engine.EventActivityFailed, engine.EventActivityTimedOut,
		engine.EventChildStarted, engine.EventChildEnded, engine.EventChildStopped}
	names = append(names, journalEvents()...)
	for _, t := range []string{"Pass", "Task", "Choice", "Wait", "Succeed", "Fail", "Map", "Parallel", "Approval", "Debate", "Checkpoint", "Workflow"} {
		names = append(names, t+"StateEntered", t+"StateExited")
	}
	return strings.Join(names, " ")
}

// executionData is the execution page's data.
type executionData struct {
	base
	Execution    *engine.Execution
	Output       payloadView
	Cause        payloadView
	Approvals    []approvalView
	Events       []eventView
	StreamEvents string
	Graph        template.HTML
	Checkpoints  []checkpointView
	// CanOperate: the caller may roll back, fork, stop, resume and
	// redrive (the forms are shown).
	CanOperate bool
	// Usage is what the execution's agents consumed (nil when nothing)
	// and Budget the workflow's Budget (nil when none).
	Usage  *usageView
	Budget *budgetView
	// Progress is how far the execution is (engine.ProgressOf), when its
	// workflow has an enabled Progress block; nil otherwise.
	Progress *engine.ExecutionProgress
	// Debates are the transcripts of its Debate states.
	Debates []debateView
	// Loops are the agent calls of its Task states that ran durable
	// steps: model turns, tool calls, a Go agent's own steps.
	Loops []loopView
	// MapRuns are the map runs of its Distributed Maps (pages_maprun.go);
	// MapRunParent and MapRunOf say whose map run a child execution is
	// part of ("" for any other execution).
	MapRuns                []mapRunView
	MapRunParent, MapRunOf string
	// Children are the child executions its Workflow states and
	// startExecution Tasks started; ParentStep is, for such a child, the
	// step of its parent (Execution.Parent) that started it; MoreChildren
	// counts the children past the first pageChildren, not listed
	// (pages_execution_children.go).
	Children     []childView
	MoreChildren int
	ParentStep   string
	// RedriveState is the state a redrive runs again and RedriveInput
	// that state's input; RedrivePatch is the JSON Patch typed into the
	// redrive form (kept when refused) and PatchError why it was refused.
	RedriveState             string
	RedriveInput             payloadView
	RedrivePatch, PatchError string
	// Feedback is its feedback section (pages_feedback.go); nil when no
	// state asked for feedback.
	Feedback *feedbackData
}

// checkpointView is a checkpoint as the execution page lists it.
type checkpointView struct {
	Name, State, Next    string
	CreatedAt, ExpiresAt time.Time
	Expired              bool
}

// Running is true while the execution may be stopped or resumed.
func (d executionData) Running() bool {
	return d.Execution.Status == engine.StatusRunning || d.Execution.Status == engine.StatusWaiting
}

// Rollbackable is true when the execution may be rolled back: not while
// a run of it is under way.
func (d executionData) Rollbackable() bool {
	return d.Execution.Status != engine.StatusRunning
}

// LastCheckpoint is the newest checkpoint's name; "" when none.
func (d executionData) LastCheckpoint() string {
	if len(d.Checkpoints) == 0 {
		return ""
	}
	return d.Checkpoints[len(d.Checkpoints)-1].Name
}

// Redrivable is true when the execution may be redriven.
func (d executionData) Redrivable() bool {
	return d.Execution.Status == engine.StatusFailed || d.Execution.Status == engine.StatusTimedOut
}

// executionPage shows an execution: its summary, its pending approvals,
// its checkpoints and its history.
func (s *Server) executionPage(w http.ResponseWriter, r *http.Request) error {
	data, err := s.execution(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "execution", data)
}

// execution gathers the execution page's data.
func (s *Server) execution(r *http.Request, id string) (executionData, error) {
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return executionData{}, err
	}
	events, err := s.st.History(r.Context(), id)
	if err != nil {
		return executionData{}, err
	}
	cps, err := s.st.ListCheckpoints(r.Context(), id)
	if err != nil {
		return executionData{}, err
	}
	data := executionData{base: baseOf(r, "Execution "+id), Execution: e, StreamEvents: streamEvents()}
	raw := "/executions/" + url.PathEscape(id) + "/raw/"
	data.CanOperate = data.Principal.Role >= RoleOperator
	// A definition stored by an older version may not parse any more:
	// the page still shows the history.
	m, err := states.Parse(e.Definition)
	if err != nil {
		s.log.Warn("parse the execution's workflow", "execution", id, "error", err)
		m = nil
	}
	currency := ""
	if b, ok := budgetOf(m); ok {
		data.Budget, currency = &b, b.Currency
	}
	if u, ok := totalUsage(e.Progress.Usage, currency); ok {
		data.Usage = &u
	}
	if m != nil {
		if data.Graph, err = executionGraph(m, e, events); err != nil {
			s.log.Warn("draw the execution's graph", "execution", id, "error", err)
		}
		data.Debates = debates(m, events, currency)
		if progressEnabled(m) {
			p := engine.ProgressOf(m, events)
			data.Progress = &p
		}
	}
	if data.MapRuns, err = s.mapRunViews(r.Context(), id); err != nil {
		return executionData{}, err
	}
	if mr, ok := engine.MapRunOf(id, e.Parent); ok {
		data.MapRunParent, data.MapRunOf = e.Parent, mr
	}
	if data.Children, data.MoreChildren, err = s.childrenViews(r.Context(), id, m, events); err != nil {
		return executionData{}, err
	}
	if data.ParentStep, err = s.parentStep(r.Context(), e); err != nil {
		return executionData{}, err
	}
	children := map[string]childView{}
	for _, c := range data.Children {
		children[c.ID] = c
	}
	if top := e.Progress.Scopes[""]; data.Redrivable() && top != nil && top.Done && top.Next != "" {
		data.RedriveState, data.RedriveInput = top.Next, cut(pretty(top.Doc), raw+"redrive-input")
	}
	if e.Status == engine.StatusSucceeded {
		data.Output = cut(pretty(e.Output), raw+"output")
	}
	data.Cause = cut(e.Cause, raw+"cause")
	data.Loops = loops(events, currency, "/executions/"+url.PathEscape(id)+"/events/")
	if data.Feedback, err = s.executionFeedback(r, e, m, events); err != nil {
		return executionData{}, err
	}
	now := time.Now()
	for _, pa := range engine.PendingOf(e) {
		data.Approvals = append(data.Approvals, approvalViewOf(id, pa, now))
	}
	for _, cp := range cps {
		data.Checkpoints = append(data.Checkpoints, checkpointView{Name: cp.Name, State: cp.State, Next: cp.Next, CreatedAt: cp.CreatedAt, ExpiresAt: cp.ExpiresAt, Expired: expired(cp, now)})
	}
	entered := map[string]any{}
	for i, ev := range events {
		at := fmt.Sprintf("/executions/%s/events/%d/", url.PathEscape(id), i+1)
		view := eventView{Seq: int64(i + 1), Type: ev.Type, State: ev.Scope + ev.State, Error: ev.Error, Time: ev.Timestamp,
			Input: cut(pretty(ev.Input), at+"input"), Output: cut(pretty(ev.Output), at+"output"), Detail: cut(pretty(ev.Detail), at+"detail"),
			Cause: cut(ev.Cause, at+"cause"), Flagged: flagged(ev), Superseded: ev.Superseded}
		if u, ok := callUsage(ev.Detail, currency); ok && isCallOutcome(ev.Type) {
			view.Usage = &u
		}
		if c, ok := children[childOfEvent(ev)]; ok && childEvent(ev.Type) {
			view.Child = &childLink{ID: c.ID, Status: c.Status, Href: c.Href}
		}
		switch {
		case ev.State != "" && strings.HasSuffix(ev.Type, "StateEntered"):
			entered[view.State] = ev.Input
		case ev.State != "" && strings.HasSuffix(ev.Type, "StateExited"):
			if in, ok := entered[view.State]; ok {
				for _, op := range jsonPatch(in, ev.Output) {
					view.Changes = append(view.Changes, changeView{Op: op.Op, Path: op.Path, Value: cut(compactValue(op.Value), at+"output")})
				}
			}
		}
		data.Events = append(data.Events, view)
	}
	return data, nil
}

// refusePage shows the execution page again with why an operator's
// action was refused; an execution that is not there, or a failure of
// the server, is an error page.
func (s *Server) refusePage(w http.ResponseWriter, r *http.Request, id string, refusal error) error {
	pr := problemOf(refusal)
	if pr.status >= http.StatusInternalServerError {
		return refusal
	}
	data, err := s.execution(r, id)
	if err != nil {
		return err
	}
	data.Error = pr.detail
	return s.render(w, pr.status, "execution", data)
}

// confirmData is the confirmation page of an operator's action: the
// same form again, with confirm=yes.
type confirmData struct {
	base
	Execution string
	Message   string
	Action    string
	Button    string
	Fields    []confirmField
}

type confirmField struct{ Name, Value string }

// confirmed tells whether the form carries its confirmation; when it does
// not, it shows the confirmation page of the action and its fields.
func (s *Server) confirmed(w http.ResponseWriter, r *http.Request, id, title, message, button string, fields ...string) (bool, error) {
	if r.PostFormValue("confirm") == "yes" {
		return true, nil
	}
	data := confirmData{base: baseOf(r, title), Execution: id, Message: message, Button: button, Action: r.URL.Path}
	for _, name := range fields {
		data.Fields = append(data.Fields, confirmField{name, r.PostFormValue(name)})
	}
	return false, s.render(w, http.StatusOK, "confirm", data)
}

// seeExecution redirects to an execution's page.
func seeExecution(w http.ResponseWriter, r *http.Request, id string) {
	http.Redirect(w, r, "/executions/"+url.PathEscape(id), http.StatusSeeOther)
}

// rollbackPage moves an execution back to a checkpoint once confirmed,
// and continues it in the background.
func (s *Server) rollbackPage(w http.ResponseWriter, r *http.Request) error {
	id, name := r.PathValue("id"), r.PostFormValue("checkpoint")
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	if name == "" {
		return s.refusePage(w, r, id, badRequest("/checkpoint", "choose a checkpoint to roll back to"))
	}
	restore, err := restoreOf(r.PostFormValue("restore"))
	if err != nil {
		return s.refusePage(w, r, id, err)
	}
	cp, err := s.checkpoint(r.Context(), id, name, true, "")
	if err != nil {
		return s.refusePage(w, r, id, err)
	}
	if e.Status == engine.StatusRunning || restore == engine.RestoreMemory && e.Status.Ended() {
		// Refused as the rollback itself would be, before asking.
		return s.refusePage(w, r, id, s.rollbackNow(r.Context(), e, name, restore))
	}
	msg := fmt.Sprintf("Execution %s goes back to checkpoint %q (saved by state %s at %s), restoring %s, and runs on from there. The events after the checkpoint stay in the history, marked superseded.",
		id, name, cp.State, formatTime(cp.CreatedAt), restoreText(restore))
	if ok, err := s.confirmed(w, r, id, "Roll back execution "+id+"?", msg, "Roll back", "checkpoint", "restore"); !ok {
		return err
	}
	if err := s.rollbackNow(r.Context(), e, name, restore); err != nil {
		return s.refusePage(w, r, id, err)
	}
	seeExecution(w, r, id)
	return nil
}

// restoreText says what a rollback or fork restores.
func restoreText(r engine.Restore) string {
	switch r {
	case engine.RestoreDocument:
		return "the document and variables (not the agent memory)"
	case engine.RestoreMemory:
		return "the agent memory only (the execution stays where it is)"
	}
	return "the document, the variables and the agent memory"
}

// forkPage starts a new execution from a checkpoint once confirmed, and
// shows the new execution's page once it exists; it runs in the
// background.
func (s *Server) forkPage(w http.ResponseWriter, r *http.Request) error {
	id, name, child := r.PathValue("id"), r.PostFormValue("checkpoint"), strings.TrimSpace(r.PostFormValue("name"))
	if _, err := s.st.Load(r.Context(), id); err != nil {
		return err
	}
	if name == "" {
		return s.refusePage(w, r, id, badRequest("/checkpoint", "choose a checkpoint to fork from"))
	}
	restore, err := restoreOf(r.PostFormValue("restore"))
	if err != nil {
		return s.refusePage(w, r, id, err)
	}
	if err := checkExecutionID(child); err != nil {
		return s.refusePage(w, r, id, err)
	}
	cp, err := s.checkpoint(r.Context(), id, name, true, "")
	if err != nil {
		return s.refusePage(w, r, id, err)
	}
	if child != "" {
		if _, err := s.st.Load(r.Context(), child); err == nil {
			return s.refusePage(w, r, id, nameTaken(child))
		} else if !errors.Is(err, engine.ErrNotFound) {
			return err
		}
	}
	named := "a new execution"
	if child != "" {
		named = "a new execution named " + child
	}
	msg := fmt.Sprintf("Checkpoint %q of execution %s (saved by state %s at %s) starts %s, with %s; %s itself does not change.",
		name, id, cp.State, formatTime(cp.CreatedAt), named, restoreText(restore), id)
	if ok, err := s.confirmed(w, r, id, "Fork execution "+id+"?", msg, "Fork", "checkpoint", "restore", "name"); !ok {
		return err
	}
	c, err := s.startFork(r.Context(), id, name, restore, child)
	if err != nil {
		return s.refusePage(w, r, id, err)
	}
	seeExecution(w, r, c)
	return nil
}

// stopPage ends an execution as ABORTED once confirmed.
func (s *Server) stopPage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.st.Load(r.Context(), id); err != nil {
		return err
	}
	msg := fmt.Sprintf("Execution %s ends as ABORTED: a run of it is cancelled, its agent calls in flight included, and its pending approvals are gone. It cannot be resumed after.", id)
	if ok, err := s.confirmed(w, r, id, "Stop execution "+id+"?", msg, "Stop"); !ok {
		return err
	}
	p, _ := principalOf(r.Context())
	if _, err := s.x.Stop(r.Context(), id, "", "stopped by "+p.Name+" from the execution page"); err != nil {
		return s.refusePage(w, r, id, err)
	}
	seeExecution(w, r, id)
	return nil
}

// resumePage continues an execution in the background (after a crash, or
// a timer not yet due: then nothing changes).
func (s *Server) resumePage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	if e.Status.Ended() {
		return s.refusePage(w, r, id, fmt.Errorf("execution %s: %w (%s)", id, engine.ErrEnded, e.Status))
	}
	s.background("resume", id, func(ctx context.Context) (*engine.Result, error) { return s.x.Resume(ctx, id, engine.ResumeOptions{}) })
	seeExecution(w, r, id)
	return nil
}

// redrivePage restarts a FAILED or TIMED_OUT execution from the state
// that failed once confirmed, with the form's JSON Patch (RFC 6902, none
// when blank) applied to that state's input first, and runs it in the
// background. A patch that is not JSON, not a patch, or does not apply to
// the input is refused before the confirmation, one the workflow's
// governance refuses after it: the execution page shows why, next to the
// patch as it was typed.
func (s *Server) redrivePage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	text := r.PostFormValue("patch")
	var opts engine.RedriveOptions
	if strings.TrimSpace(text) != "" {
		if opts.Patch, err = readPatch(text); err != nil {
			return s.redriveRefused(w, r, id, text, http.StatusBadRequest, err.Error())
		}
		if top := e.Progress.Scopes[""]; top != nil && top.Done && top.Next != "" {
			// Tried on the input now, so that the confirmation is not
			// asked for a patch that cannot apply.
			if _, err := opts.Patch.Apply(top.Doc); err != nil {
				return s.redriveRefused(w, r, id, text, http.StatusBadRequest, patchMessage(err))
			}
		}
	}
	msg := fmt.Sprintf("Execution %s (%s) runs again from the state that failed, with the input that state had.", id, e.Status)
	if len(opts.Patch) > 0 {
		msg = fmt.Sprintf("Execution %s (%s) runs again from the state that failed, with the input that state had changed by the JSON Patch below (%d operations), if the workflow's governance accepts the change.",
			id, e.Status, len(opts.Patch))
	}
	if ok, err := s.confirmed(w, r, id, "Redrive execution "+id+"?", msg, "Redrive", "patch"); !ok {
		return err
	}
	opts.RecordOnly = true
	if _, err := s.x.Redrive(r.Context(), id, opts); err != nil {
		var pe *engine.PatchError
		var ge *engine.GovernanceError
		switch {
		case errors.As(err, &pe):
			return s.redriveRefused(w, r, id, text, http.StatusBadRequest, patchMessage(pe))
		case errors.As(err, &ge):
			return s.redriveRefused(w, r, id, text, http.StatusUnprocessableEntity,
				fmt.Sprintf("the workflow's governance refuses the patched input: %s: %s", ge.Violation.Name, ge.Violation.Cause))
		case errors.Is(err, engine.ErrInvalidInput):
			return s.redriveRefused(w, r, id, text, http.StatusUnprocessableEntity, err.Error())
		}
		return s.refusePage(w, r, id, redriveProblem(err))
	}
	s.background("continue after a redrive", id, func(ctx context.Context) (*engine.Result, error) {
		return s.x.Resume(ctx, id, engine.ResumeOptions{})
	})
	seeExecution(w, r, id)
	return nil
}

// readPatch reads a JSON Patch typed into a form; the error says where
// the text is at fault: its line and column, or the operation and member.
func readPatch(text string) (engine.Patch, error) {
	v, err := jsonvalue.Decode([]byte(text))
	if err != nil {
		var je *jsonvalue.JSONError
		if errors.As(err, &je) && je.Offset >= 0 {
			line, col := lineColumn(text, je.Offset)
			return nil, fmt.Errorf("the patch is not JSON: line %d, column %d (%s): %s", line, col, je.Path, je.Msg)
		}
		return nil, fmt.Errorf("the patch is not JSON: %v", err)
	}
	p, err := engine.ParsePatch(v)
	if err != nil {
		return nil, errors.New(patchMessage(err))
	}
	return p, nil
}

// patchMessage names the operation of a patch at fault, by its index and
// JSON Pointer in the patch.
func patchMessage(err error) string {
	var pe *engine.PatchError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	if pe.Index < 0 {
		return "the patch: " + pe.Msg
	}
	return fmt.Sprintf("operation %d of the patch (at %s): %s", pe.Index, pe.Pointer(), pe.Msg)
}

// lineColumn turns a byte offset of text into a line and a column (of
// characters), both from 1.
func lineColumn(text string, offset int) (line, col int) {
	offset = min(max(offset, 0), len(text))
	before := text[:offset]
	line = strings.Count(before, "\n") + 1
	col = len([]rune(before[strings.LastIndex(before, "\n")+1:])) + 1
	return line, col
}

// redriveRefused shows the execution page again with the patch as it was
// typed and why the redrive was refused, beside it.
func (s *Server) redriveRefused(w http.ResponseWriter, r *http.Request, id, patch string, status int, why string) error {
	data, err := s.execution(r, id)
	if err != nil {
		return err
	}
	data.RedrivePatch, data.PatchError = patch, why
	data.Error = "The redrive was refused: " + why
	return s.render(w, status, "execution", data)
}

// executionLive is the live part of the execution page alone (summary,
// approvals, graph, controls, debates, model loops, checkpoints), which
// the page's script fetches again when the execution's status may have
// changed.
func (s *Server) executionLive(w http.ResponseWriter, r *http.Request) error {
	data, err := s.execution(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTemplates["execution"].ExecuteTemplate(&buf, "live", data); err != nil {
		return fmt.Errorf("render the execution's live part: %w", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write(buf.Bytes())
	return err
}

// patchRow is an operation of a checkpoints' difference as the page
// shows it.
type patchRow struct{ Op, Path, Value string }

// checkpointDiffPage shows the JSON Patch that turns the document of
// checkpoint ?from= into that of ?to=.
func (s *Server) checkpointDiffPage(w http.ResponseWriter, r *http.Request) error {
	id, q := r.PathValue("id"), r.URL.Query()
	data := struct {
		base
		Execution, From, To string
		Rows                []patchRow
	}{base: baseOf(r, "Checkpoints of "+id), Execution: id, From: q.Get("from"), To: q.Get("to")}
	if data.From == "" || data.To == "" {
		return s.refusePage(w, r, id, badRequest("", "choose two checkpoints to compare: ?from= and ?to="))
	}
	from, err := s.checkpoint(r.Context(), id, data.From, false, "")
	if err != nil {
		return s.refusePage(w, r, id, err)
	}
	to, err := s.checkpoint(r.Context(), id, data.To, false, "")
	if err != nil {
		return s.refusePage(w, r, id, err)
	}
	for _, op := range jsonPatch(from.Document, to.Document) {
		row := patchRow{Op: op.Op, Path: op.Path}
		if op.Value != nil {
			row.Value = string(op.Value)
		}
		data.Rows = append(data.Rows, row)
	}
	return s.render(w, http.StatusOK, "checkpoint-diff", data)
}
