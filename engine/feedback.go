package engine

import (
	"context"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Feedback on Tasks' outputs (ASL's Feedback block): what people say of
// a state's output after it ran — a rating, thumbs, a choice among
// labels, text, or structured fields — kept in the store with who said
// it, listed and exported per workflow and state for evaluation and
// fine-tuning sets. FeedbackStore is what a store implements for it.

// EventFeedbackRequested records that a state whose Feedback block
// collects feedback completed: people may now give it.
const EventFeedbackRequested = "FeedbackRequested"

// Feedback is one person's feedback on one state's output.
type Feedback struct {
	// ID identifies it (a UUIDv7: ids sort by time).
	ID string
	// Execution, Workflow (its state machine's name), State (as the
	// history names it, qualified inside Map items and Parallel branches)
	// and Step (the state's visit, "Classify#1") say what it is about.
	Execution string
	Workflow  string
	State     string
	Step      string
	// By is who gave it (the caller's name) and Role its role.
	By   string
	Role string
	// Type is the block's Type: "rating", "thumbs", "choice", "text" or
	// "structured"; Value is the checked value: a number (rating), "up"
	// or "down" (thumbs), one of the Labels (choice), a string (text), an
	// object of the Fields (structured).
	Type  string
	Value any
	// Comment is free text given with it; empty when none.
	Comment string
	// Output is the state's output the feedback is about (for export
	// as an evaluation set), as the history recorded it; nil when it was
	// not recorded.
	Output    any
	CreatedAt time.Time
}

// FeedbackFilter selects feedback to list: by Workflow, State and
// Execution when set, after the id After, at most Limit (0: all), in id
// order.
type FeedbackFilter struct {
	Workflow, State, Execution string
	After                      string
	Limit                      int
}

// FeedbackStore is implemented by stores that keep feedback.
type FeedbackStore interface {
	// AddFeedback stores f (its ID set by the caller); an ID stored
	// already is ErrExists.
	AddFeedback(ctx context.Context, f *Feedback) error
	// ListFeedback lists feedback in id order, as f selects.
	ListFeedback(ctx context.Context, f FeedbackFilter) ([]Feedback, error)
}

// feedbackRequested records, for a Task whose Feedback block collects,
// that its output may now get feedback: a FeedbackRequested event with
// the output and what the block asks (its step names the visit).
func (h *stateRun) feedbackRequested(output any) {
	t, ok := h.st.(*states.Task)
	if !ok || t.Feedback == nil || !t.Feedback.Collect {
		return
	}
	fb := t.Feedback
	d := map[string]any{"step": h.step(), "type": fb.Type}
	if fb.Question != "" {
		d["question"] = fb.Question
	}
	if fb.Type == "rating" {
		d["scale"] = []any{jsonvalue.FloatNumber(fb.Scale[0]), jsonvalue.FloatNumber(fb.Scale[1])}
	}
	if len(fb.Labels) > 0 {
		labels := make([]any, len(fb.Labels))
		for i, l := range fb.Labels {
			labels[i] = l
		}
		d["labels"] = labels
	}
	h.r.ownEvent(Event{Type: EventFeedbackRequested, State: h.name(), Scope: h.sc.prefix, Output: output, Detail: d})
}
