package server

// Feedback on states' outputs (ASL's Feedback block): given by people
// (approvers) through the API and the execution page, listed and
// exported as JSONL by viewers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// maxFeedbackComment bounds a feedback's comment, in characters.
const maxFeedbackComment = 10000

// feedbackStore is the server's store as a feedback store, or the
// problem of a store that keeps none.
func (s *Server) feedbackStore() (engine.FeedbackStore, error) {
	f, ok := s.st.(engine.FeedbackStore)
	if !ok {
		return nil, &problem{status: http.StatusNotImplemented, kind: "no-feedback", title: "no feedback store",
			detail: "this server's store keeps no feedback (the memory, bbolt and PostgreSQL stores do)"}
	}
	return f, nil
}

// feedbackBlock finds the Task named state in m or its nested machines,
// with a Feedback block that collects.
func feedbackBlock(m *states.Machine, state string) *states.FeedbackConfig {
	for name, st := range m.States {
		if t, ok := st.(*states.Task); ok && name == state && t.Feedback != nil && t.Feedback.Collect {
			return t.Feedback
		}
		var nested []*states.Machine
		switch s := st.(type) {
		case *states.Map:
			nested = append(nested, s.Processor)
		case *states.Parallel:
			nested = append(nested, s.Branches...)
		}
		for _, n := range nested {
			if n == nil {
				continue
			}
			if fb := feedbackBlock(n, state); fb != nil {
				return fb
			}
		}
	}
	return nil
}

// giveFeedback answers POST /v1/executions/{id}/feedback (approver): the
// value is checked against the state's Feedback block and stored with
// the caller and the state's output, 201 with the feedback. 404 for an
// execution that does not exist; 400 for a state without a Feedback block
// that collects, or a value the block refuses (naming where); 409 for a
// state that has not completed (no FeedbackRequested event of it, or of
// the step given). Feedback on a visit the execution waits at (a
// Feedback block with Wait true) also wakes it: it goes on in the
// background.
func (s *Server) giveFeedback(w http.ResponseWriter, r *http.Request) error {
	var req api.FeedbackRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	switch {
	case req.State == "":
		return badRequest("/state", "state is required")
	case len(req.Value) == 0:
		return badRequest("/value", "value is required")
	}
	f, err := s.addFeedback(r.Context(), r.PathValue("id"), feedbackInput{State: req.State, Step: req.Step, Comment: req.Comment,
		Value: func(*states.FeedbackConfig) (any, error) {
			v, err := jsonvalue.Decode(req.Value)
			if err != nil {
				return nil, badRequest("/value", "value is not strict JSON: %v", err)
			}
			return v, nil
		}})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, feedbackOf(f))
	return nil
}

// feedbackInput is feedback as a person gives it, through the API or the
// execution page.
type feedbackInput struct {
	// State is the state's name (unqualified, as its definition names
	// it) and Step its visit ("": the latest).
	State, Step string
	// Comment is free text given with the value; may be empty.
	Comment string
	// Value reads the value given, for the block fb that asks for it; an
	// error is the caller's (a problem naming /value).
	Value func(fb *states.FeedbackConfig) (any, error)
}

// addFeedback checks in against the Feedback block of its state in
// execution id and stores it with the caller (from ctx) and the state's
// output: the API's and the execution page's way to give feedback. The
// errors are problems: 404 for an execution that does not exist; 400 for
// a state without a Feedback block that collects, or a value the block
// refuses (naming where); 409 for a state that has not completed.
func (s *Server) addFeedback(ctx context.Context, id string, in feedbackInput) (*engine.Feedback, error) {
	fs, err := s.feedbackStore()
	if err != nil {
		return nil, err
	}
	switch {
	case in.State == "":
		return nil, badRequest("/state", "state is required")
	case utf8.RuneCountInString(in.Comment) > maxFeedbackComment:
		return nil, badRequest("/comment", "comment has more than %d characters", maxFeedbackComment)
	case strings.ContainsRune(in.Comment, 0):
		return nil, badRequest("/comment", "comment holds a NUL character")
	}
	e, err := s.st.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	m, err := s.machines.Parse(e.Definition)
	if err != nil {
		return nil, fmt.Errorf("execution %s: its definition: %w", e.ID, err)
	}
	fb := feedbackBlock(m, in.State)
	if fb == nil {
		return nil, badRequest("/state", "state %q of execution %s has no Feedback block that collects feedback", in.State, e.ID)
	}
	value, err := in.Value(fb)
	if err != nil {
		return nil, err
	}
	if value, err = fb.Check(value); err != nil {
		return nil, badRequest("/value", "value: %v", err)
	}
	hist, err := s.st.History(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	var asked *engine.Event
	for i := range hist {
		ev := &hist[i]
		if ev.Type != engine.EventFeedbackRequested || ev.State != in.State {
			continue
		}
		step, _ := detailString(ev.Detail, "step")
		if in.Step == "" || step == in.Step {
			asked = ev
		}
	}
	if asked == nil {
		what := "has not completed yet"
		if in.Step != "" {
			what = "has no completed visit " + in.Step
		}
		return nil, &problem{status: http.StatusConflict, kind: "not-completed", title: "nothing to give feedback on",
			detail: fmt.Sprintf("state %q of execution %s %s", in.State, e.ID, what)}
	}
	uid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	p, _ := principalOf(ctx)
	step, _ := detailString(asked.Detail, "step")
	f := engine.Feedback{ID: uid.String(), Execution: e.ID, Workflow: e.MachineName, State: asked.Scope + asked.State, Step: step,
		By: p.Name, Role: p.Role.String(), Type: fb.Type, Value: value, Comment: in.Comment, Output: asked.Output, CreatedAt: time.Now().UTC()}
	// A visit the execution waits at is woken: the wake-up commits the
	// feedback first, so that a restart in between still stores it.
	woke := false
	if slices.ContainsFunc(engine.WaitingFeedbackOf(e), func(pf engine.PendingFeedback) bool { return pf.ID == f.Step }) {
		_, err := s.x.GiveFeedback(ctx, e.ID, &f, engine.ResumeOptions{RecordOnly: true})
		switch {
		case err == nil:
			woke = true
		case !errors.Is(err, engine.ErrNotWaitingForFeedback):
			return nil, err
		}
	}
	if err := fs.AddFeedback(ctx, &f); err != nil {
		return nil, err
	}
	s.log.Info("feedback given", "execution", e.ID, "state", f.State, "by", p.Name, "type", f.Type, "woke", woke)
	if woke {
		s.continueLater("continue after feedback", e.ID)
	}
	return &f, nil
}

// detailString reads a string member of an event's detail.
func detailString(detail any, key string) (string, bool) {
	m, ok := detail.(map[string]any)
	if !ok {
		return "", false
	}
	s, ok := m[key].(string)
	return s, ok
}

// feedbackOf is f as the API shows it.
func feedbackOf(f *engine.Feedback) api.Feedback {
	out := api.Feedback{ID: f.ID, Execution: f.Execution, Workflow: f.Workflow, State: f.State, Step: f.Step, By: f.By, Role: f.Role,
		Type: f.Type, Value: rawOrNull(f.Value), Comment: f.Comment, CreatedAt: f.CreatedAt.UTC()}
	if f.Output != nil {
		out.Output = rawOrNull(f.Output)
	}
	return out
}

// feedbackParams are the query parameters GET /v1/feedback takes.
var feedbackParams = []string{"workflow", "state", "execution", "after", "limit", "format"}

// listFeedback answers GET /v1/feedback (viewer): a page of feedback in
// time order, as JSON, or with ?format=jsonl every match, one JSON object
// a line (application/jsonl), for evaluation and fine-tuning sets.
func (s *Server) listFeedback(w http.ResponseWriter, r *http.Request) error {
	fs, err := s.feedbackStore()
	if err != nil {
		return err
	}
	f, jsonl, err := parseFeedbackQuery(r.URL.Query())
	if err != nil {
		return err
	}
	if jsonl {
		w.Header().Set("Content-Type", "application/jsonl")
		w.Header().Set("Content-Disposition", `attachment; filename="feedback.jsonl"`)
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(w)
		for {
			page, err := fs.ListFeedback(r.Context(), f)
			if err != nil {
				return nil // the status is sent: the export ends short
			}
			for i := range page {
				if enc.Encode(feedbackOf(&page[i])) != nil {
					return nil
				}
			}
			if len(page) < f.Limit {
				return nil
			}
			f.After = page[len(page)-1].ID
		}
	}
	limit := f.Limit
	f.Limit++
	list, err := fs.ListFeedback(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.FeedbackPage{Feedback: []api.Feedback{}}
	if len(list) > limit {
		list = list[:limit]
		out.Next = list[len(list)-1].ID
	}
	for i := range list {
		out.Feedback = append(out.Feedback, feedbackOf(&list[i]))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// parseFeedbackQuery checks GET /v1/feedback's query.
func parseFeedbackQuery(q url.Values) (engine.FeedbackFilter, bool, error) {
	f := engine.FeedbackFilter{Limit: 100}
	jsonl := false
	if err := checkQuery(q, feedbackParams); err != nil {
		return f, false, err
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(name)
		if len(v) > maxExecutionID || !utf8.ValidString(v) || strings.ContainsFunc(v, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return f, false, badRequest("", "%s must be text of at most %d bytes without control characters", name, maxExecutionID)
		}
		switch name {
		case "workflow":
			f.Workflow = v
		case "state":
			f.State = v
		case "execution":
			f.Execution = v
		case "after":
			f.After = v
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return f, false, badRequest("", "limit %q is not a number from 1 to 1000", v)
			}
			f.Limit = n
		case "format":
			switch v {
			case "json":
			case "jsonl":
				jsonl = true
			default:
				return f, false, badRequest("", "format %q is not json or jsonl", v)
			}
		}
	}
	return f, jsonl, nil
}
