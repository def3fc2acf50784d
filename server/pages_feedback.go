package server

// The execution page's feedback: for each state whose Feedback block
// asked for feedback (a FeedbackRequested event), its question and the
// feedback given, and for approvers a form a visit, posted to
// POST /executions/{id}/feedback, which gives it as the API does.

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// maxFeedbackShown bounds the feedback the execution page lists (the
// API lists and exports the rest).
const maxFeedbackShown = 500

// maxRatingOptions: a rating scale of at most this many integers is a
// select of them; a wider scale, or one whose ends are not integers, is
// a number input.
const maxRatingOptions = 101

// feedbackData is the execution page's feedback section: nil when no
// state of the execution asked for feedback.
type feedbackData struct {
	// States are the states that asked for feedback, in the order they
	// first asked.
	States []feedbackStateView
	// CanGive: the caller may give feedback (an approver or higher, on a
	// store that keeps feedback); the forms are shown.
	CanGive bool
	// Given is the visit the caller just gave feedback on ("" when
	// none): the page says it is recorded.
	Given string
	// More: the execution has more feedback than the page lists.
	More bool
}

// feedbackStateView is a state that asked for feedback.
type feedbackStateView struct {
	// State is its name as the history gives it (qualified inside Map
	// items and Parallel branches); Name as its definition gives it (the
	// form's state).
	State, Name string
	// Type and Question are what its block asks.
	Type, Question string
	// Ratings are a rating's options when its scale is of few integers;
	// otherwise Min and Max bound a number input.
	Ratings  []string
	Min, Max string
	// Labels are a choice's options.
	Labels []string
	// Fields says a structured block's fields, for the form's hint.
	Fields string
	// Form: the page can show its form (its block is in the definition).
	Form bool
	// Steps are its visits that asked, each with its form.
	Steps []feedbackStepView
	// Given is the feedback given on it, oldest first.
	Given []feedbackGivenView
}

// feedbackStepView is a visit of a state that asked for feedback: its
// form, filled again with why when it was refused.
type feedbackStepView struct {
	// ID is unique on the page, for the form's labels.
	ID   string
	Step string
	// Seq is the FeedbackRequested event's number in the timeline.
	Seq int
	// Value, Comment and Error: the form refused, as it was sent, and why.
	Value, Comment, Error string
	// Waiting: the execution waits for feedback on this visit.
	Waiting bool
}

// feedbackGivenView is one person's feedback as the page lists it.
type feedbackGivenView struct {
	Step, By, Role, Value, Comment string
	CreatedAt                      time.Time
}

// executionFeedback gathers the feedback section of execution e (whose
// machine m is nil when its definition no longer parses) from its
// history events and the feedback stored; ?feedback= names the visit
// the caller just gave feedback on.
func (s *Server) executionFeedback(r *http.Request, e *engine.Execution, m *states.Machine, events []engine.Event) (*feedbackData, error) {
	d := &feedbackData{}
	at := map[string]int{}
	waiting := engine.WaitingFeedbackOf(e)
	for i, ev := range events {
		if ev.Type != engine.EventFeedbackRequested {
			continue
		}
		name := ev.Scope + ev.State
		k, ok := at[name]
		if !ok {
			k = len(d.States)
			at[name] = k
			d.States = append(d.States, feedbackStateOf(ev, m))
		}
		step, _ := detailString(ev.Detail, "step")
		st := &d.States[k]
		st.Steps = append(st.Steps, feedbackStepView{ID: fmt.Sprintf("feedback-%d-%d", k, len(st.Steps)), Step: step, Seq: i + 1,
			Waiting: slices.ContainsFunc(waiting, func(pf engine.PendingFeedback) bool { return pf.ID == step })})
	}
	if len(d.States) == 0 {
		return nil, nil
	}
	fs, err := s.feedbackStore()
	if err != nil {
		return d, nil // no feedback kept: the questions alone
	}
	p, _ := principalOf(r.Context())
	d.CanGive = p.Role.allows(RoleApprover)
	list, err := fs.ListFeedback(r.Context(), engine.FeedbackFilter{Execution: e.ID, Limit: maxFeedbackShown + 1})
	if err != nil {
		return nil, fmt.Errorf("execution %s: its feedback: %w", e.ID, err)
	}
	if len(list) > maxFeedbackShown {
		list, d.More = list[:maxFeedbackShown], true
	}
	given := r.URL.Query().Get("feedback")
	for _, f := range list {
		k, ok := at[f.State]
		if !ok {
			continue
		}
		d.States[k].Given = append(d.States[k].Given, feedbackGivenView{Step: f.Step, By: f.By, Role: f.Role, Value: feedbackText(f.Value),
			Comment: f.Comment, CreatedAt: f.CreatedAt})
		if given != "" && f.Step == given && f.By == p.Name {
			d.Given = given
		}
	}
	return d, nil
}

// feedbackStateOf is the state that asked for feedback in ev, its
// form's controls from its block in m (none when m is nil or holds no
// such block any more: the question from ev's detail then).
func feedbackStateOf(ev engine.Event, m *states.Machine) feedbackStateView {
	v := feedbackStateView{State: ev.Scope + ev.State, Name: ev.State}
	v.Type, _ = detailString(ev.Detail, "type")
	v.Question, _ = detailString(ev.Detail, "question")
	var fb *states.FeedbackConfig
	if m != nil {
		fb = feedbackBlock(m, ev.State)
	}
	if fb == nil {
		return v
	}
	v.Form, v.Type, v.Question = true, fb.Type, fb.Question
	switch fb.Type {
	case states.FeedbackRating:
		lo, hi := fb.Scale[0], fb.Scale[1]
		if lo == math.Trunc(lo) && hi == math.Trunc(hi) && hi-lo < maxRatingOptions {
			for n := lo; n <= hi; n++ {
				v.Ratings = append(v.Ratings, strconv.FormatFloat(n, 'f', -1, 64))
			}
		}
		v.Min, v.Max = strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64)
	case states.FeedbackChoice:
		v.Labels = fb.Labels
	case states.FeedbackStructured:
		var fields []string
		for _, f := range fb.Fields {
			what := f.Type
			if f.Optional || slices.Contains(fb.Optional, f.Name) {
				what += ", optional"
			}
			fields = append(fields, fmt.Sprintf("%s (%s)", f.Name, what))
		}
		v.Fields = strings.Join(fields, ", ")
	}
	return v
}

// feedbackText is a feedback value as the page shows it: a string as
// it is, anything else as compact JSON.
func feedbackText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// feedbackFormValue reads a feedback form's value (always text) as
// block fb takes it: a rating's as a JSON number, a structured block's as
// a JSON object, the others' as the text itself.
func feedbackFormValue(raw string) func(fb *states.FeedbackConfig) (any, error) {
	return func(fb *states.FeedbackConfig) (any, error) {
		switch fb.Type {
		case states.FeedbackRating:
			t := strings.TrimSpace(raw)
			if t == "" {
				return nil, badRequest("/value", "value is required: a rating from %g to %g", fb.Scale[0], fb.Scale[1])
			}
			v, err := jsonvalue.Decode([]byte(t))
			if err != nil || jsonvalue.TypeName(v) != "number" {
				return nil, badRequest("/value", "value %q is not a number (a rating from %g to %g)", clipText(t, 40), fb.Scale[0], fb.Scale[1])
			}
			return v, nil
		case states.FeedbackStructured:
			if strings.TrimSpace(raw) == "" {
				return nil, badRequest("/value", "value is required: a JSON object of the fields")
			}
			v, err := jsonvalue.Decode([]byte(raw))
			if err != nil {
				return nil, badRequest("/value", "value is not a JSON object: %v", err)
			}
			return v, nil
		}
		if raw == "" {
			return nil, badRequest("/value", "value is required")
		}
		return raw, nil
	}
}

// feedbackPage gives feedback from the execution page's form (state,
// step, value, comment) as the API does, and goes back to the page,
// which says it is recorded; a refused form shows the page again with
// it filled as sent and why, with the refusal's status.
func (s *Server) feedbackPage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	in := feedbackInput{State: r.PostFormValue("state"), Step: r.PostFormValue("step"), Comment: r.PostFormValue("comment")}
	raw := r.PostFormValue("value")
	in.Value = feedbackFormValue(raw)
	f, err := s.addFeedback(r.Context(), id, in)
	if err == nil {
		http.Redirect(w, r, "/executions/"+url.PathEscape(id)+"?feedback="+url.QueryEscape(f.Step)+"#feedback", http.StatusSeeOther)
		return nil
	}
	pr := problemOf(err)
	if pr.status >= http.StatusInternalServerError && pr.status != http.StatusNotImplemented {
		return err
	}
	data, derr := s.execution(r, id)
	if derr != nil {
		return derr
	}
	data.Error = pr.detail
	if data.Feedback != nil {
		data.Feedback.refuse(in.State, in.Step, raw, in.Comment, pr.detail)
	}
	return s.render(w, pr.status, "execution", data)
}

// refuse fills again the form of state's visit step (its latest visit
// when step is "") with what was sent, and why it was refused.
func (d *feedbackData) refuse(state, step, value, comment, why string) {
	for i := range d.States {
		st := &d.States[i]
		if st.Name != state || len(st.Steps) == 0 {
			continue
		}
		k := len(st.Steps) - 1
		for j := range st.Steps {
			if st.Steps[j].Step == step {
				k = j
			}
		}
		if step != "" && st.Steps[k].Step != step {
			continue
		}
		st.Steps[k].Value, st.Steps[k].Comment, st.Steps[k].Error = value, comment, why
		return
	}
}
